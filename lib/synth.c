/* lib/synth.c: not yet written (owner fills it in) */
