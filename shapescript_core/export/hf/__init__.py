"""The Hugging Face target: a model directory transformers loads with trust_remote_code."""
