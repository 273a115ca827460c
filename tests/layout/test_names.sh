#!/bin/sh
# Catch test names become ctest names, and CMake splits a name at every ';' into tests that run
# nothing ("No tests ran", exit 0): a test case named with a ';' would never run under ctest.
# Usage: test_names.sh SOURCE_DIR
found=$(grep -rn 'TEST_CASE("[^"]*;' "$1/tests" --include='*.cpp')
if [ -n "$found" ]; then
  echo "Catch test names with ';' (ctest splits them and runs none of the parts):"
  echo "$found"
  exit 1
fi
echo "no Catch test name contains ';'"
