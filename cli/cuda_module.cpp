// The body of libtrainsim_cuda.so (cli/cuda_module.hpp): the CUDA backend's training run
// (runtime/cuda) and the GPU calibrator (calibrate/cuda_calibrator) behind one exported C symbol.
// Every exception becomes a CudaModuleFailure; nothing here prints or chooses an exit code.
#include <exception>

#include "calibrate/cuda_calibrator.hpp"
#include "cli/cuda_module.hpp"
#include "common/errors.hpp"
#include "common/provenance.hpp"
#include "runtime/cuda/cuda_trainer.hpp"

namespace trainsim {

namespace {

template <typename Body>
void catch_into(CudaModuleFailure& failure, Body&& body) {
  failure = {};
  try {
    body();
  } catch (const InputError& e) {
    failure = {CudaModuleFailure::Kind::kInput, e.problems(), e.hint()};
  } catch (const DeviceError& e) {
    failure = {CudaModuleFailure::Kind::kDevice, {e.what()}, {}};
  } catch (const std::exception& e) {
    failure = {CudaModuleFailure::Kind::kOther, {e.what()}, {}};
  } catch (...) {
    failure = {CudaModuleFailure::Kind::kOther, {"an exception that is not a std::exception"}, {}};
  }
}

void train(const CudaTrainCall& call, CudaModuleFailure& failure) {
  catch_into(failure, [&] {
    cuda::check_cuda_plan(*call.model, *call.plan, call.world_size);
    cuda::CudaTrainer trainer(*call.model, *call.plan, *call.options, MPI_COMM_WORLD);
    *call.measurement = trainer.run(*call.on_iteration);
    *call.device = cuda::device_report_json(trainer.device_report());
  });
}

void calibrate(const CudaCalibrateCall& call, CudaModuleFailure& failure) {
  catch_into(failure, [&] { *call.profile = calibrate_gpu(*call.options); });
}

}  // namespace

}  // namespace trainsim

extern "C" __attribute__((visibility("default"))) const trainsim::CudaModuleEntry* trainsim_cuda_module_entry() {
  static const trainsim::CudaModuleEntry entry{trainsim::kCudaModuleAbiVersion, trainsim::git_revision(), {},
                                               &trainsim::train, &trainsim::calibrate};
  return &entry;
}
