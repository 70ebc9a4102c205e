"""The wgpu server: WGSL run for real through wgpu-py (Vulkan, Metal, DX12 or lavapipe)."""
