"""irviz: TorchScript graph-IR visualizer and static analyzer."""
__version__ = "0.1.0"
