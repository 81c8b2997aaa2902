"""patchkit: carry TensorRT-LLM fixes as versioned patch sets until upstream merges them."""
__version__ = "0.1.0"
