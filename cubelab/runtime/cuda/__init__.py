"""The CUDA runtime (`Device.cuda()`): NVRTC-compiled CUDA C++ on an NVIDIA GPU."""
