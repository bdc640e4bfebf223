/* lib/hub.c: not yet written (owner fills it in) */
