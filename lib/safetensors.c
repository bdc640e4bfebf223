/* lib/safetensors.c: not yet written (owner fills it in) */
