"""The vLLM target: the Hugging Face directory, made to run in vLLM."""
