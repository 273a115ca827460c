#!/usr/bin/env bash
# check_includes.sh [ROOT]: checks every project #include against the layout table in
# ROOT/docs/architecture.md (the "may include" column). A file belongs to the longest folder of
# the table its path starts with (runtime/cpu/ before runtime/); so does an include's target.
# An include of another folder that its row does not list is an error: the file, the line, the
# include and what the row allows are printed, and the exit code is 1. tests/, fuzz/ and bench/
# may include anything and are not checked. Reads text only: nothing is built or run.
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
table=$root/docs/architecture.md
[ -f "$table" ] || { echo "error: $table not found (the layout table this check reads)" >&2; exit 2; }

# Rows look like: | `runtime/cpu/` | role ... | `common`, `model`, `runtime` |
declare -A allowed=()
folders=()
while IFS= read -r line; do
  folder=$(sed -E 's/^\| `([a-z_/]+)\/` \|.*/\1/' <<<"$line")
  deps=$(awk -F'|' '{print $(NF-1)}' <<<"$line" | grep -o '`[a-z_/]*`' | tr -d '`' | tr '\n' ' ' || true)
  folders+=("$folder")
  allowed[$folder]=" $deps "
done < <(grep -E '^\| `[a-z_/]+/` \|' "$table")
[ ${#folders[@]} -gt 0 ] || { echo "error: $table: no layout rows ('| \`folder/\` | role | may include |')" >&2; exit 2; }

rules=$(for f in "${folders[@]}"; do echo "$f|${allowed[$f]}"; done)
cd "$root"
existing=(); for f in "${folders[@]}"; do [ -d "$f" ] && existing+=("$f"); done
files=$(find "${existing[@]}" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) | sort -u)
[ -n "$files" ] || { echo "layout: no source files under the table's folders" >&2; exit 2; }
# Every include line of every file, FILE:LINE:TEXT, judged in one awk pass.
set +e
report=$(grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $files | awk -v rules="$rules" '
  function unit_of(path,   i, best) {
    best = ""
    for (i = 1; i <= n; i++) if (index(path, folder[i] "/") == 1 && length(folder[i]) > length(best)) best = folder[i]
    return best
  }
  BEGIN {
    n = split(rules, rows, "\n")
    for (i = 1; i <= n; i++) { split(rows[i], parts, "|"); folder[i] = parts[1]; deps[parts[1]] = parts[2] }
  }
  {
    file = $0; sub(/:.*/, "", file)
    rest = substr($0, length(file) + 2); line = rest; sub(/:.*/, "", line)
    text = substr(rest, length(line) + 2)
    if (!match(text, /"[^"]+"/)) next
    target = substr(text, RSTART + 1, RLENGTH - 2)
    if (index(target, "/") == 0) next
    src = unit_of(file); dst = unit_of(target)
    if (src == "" || dst == "" || src == dst) next
    if (index(deps[src], " " dst " ") == 0) {
      printf "%s:%s: includes \"%s\" (%s/), but %s/ may include only:%s(docs/architecture.md)\n", file, line, target, dst, src, (deps[src] ~ /[a-z]/ ? deps[src] : " nothing ")
      errors++
    }
  }
  END { exit errors > 0 ? 1 : 0 }')
rc=$?
set -e
checked=$(wc -w <<<"$files")
if [ "$rc" -ne 0 ]; then
  echo "$report"
  echo "error: $(grep -c . <<<"$report") include(s) against the layout table in docs/architecture.md" >&2
  echo "hint: move the code down to a folder both may include, or change the table (and say why)" >&2
  exit 1
fi
echo "layout: $checked files in ${#folders[@]} folders, every include allowed by docs/architecture.md"
