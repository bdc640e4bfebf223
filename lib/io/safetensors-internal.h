/*
 * safetensors-internal.h - what safetensors.c and tensorval.c share
 * (private to lib/io/).
 */
#ifndef EMB_IO_SAFETENSORS_INTERNAL_H
#define EMB_IO_SAFETENSORS_INTERNAL_H

/* a tensor name fit for a one-line message: control bytes become '?',
 * long names are cut; BUF (132 bytes) holds it, and is returned */
const char *emb_st_shown(char *buf, const char *s);

#endif /* EMB_IO_SAFETENSORS_INTERNAL_H */
