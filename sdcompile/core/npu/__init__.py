"""The device layer: real NPU stack detection, CPU emulation of the fused ops, the four backends."""
