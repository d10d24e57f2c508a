"""C kernels of the optimizer node (compiled on first use by ``innet.native_build``)."""
