/*
 * amx.h - the tile configuration both AMX kernels use
 * (kernels_i8_amx.c, kernels_bf16_amx.c), for files built with
 * $(AMX_CFLAGS) only.  Private to lib/kern/.
 *
 * Tiles 0-3: the accumulators of a 32-row x 2-panel block (0: rows
 * 0-15 x panel 0, 1: rows 0-15 x panel 1, 2: rows 16-31 x panel 0, 3:
 * rows 16-31 x panel 1); 4, 5: the A tiles of rows 0-15 and 16-31; 6,
 * 7: the B tiles of panels 0 and 1.  Every row is 64 bytes (16 int32 or
 * fp32 accumulators; 64 u8 or 32 bf16 of A; 16 columns of 4 u8 or 2
 * bf16 of B).
 */
#ifndef EMB_AMX_H
#define EMB_AMX_H

#include <stdint.h>
#include <string.h>
#include <immintrin.h>

/* the 64-byte operand of ldtilecfg, palette 1 */
typedef struct emb_tilecfg {
	uint8_t palette, start;
	uint8_t res[14];
	uint16_t colsb[16];
	uint8_t rows[16];
} emb_tilecfg;

/*
 * Load the configuration for a block whose first row tile has ra rows
 * (1..16) and second rb (0..16; 0: tiles 2, 3 and 5 unused).  It is
 * per thread, and zeroes every tile: load it between blocks only.
 */
static inline void emb_amx_config(int ra, int rb)
{
	emb_tilecfg c;

	memset(&c, 0, sizeof(c));
	c.palette = 1;
	for (int t = 0; t < 8; t++) {
		c.colsb[t] = 64;
		c.rows[t] = 16;
	}
	c.rows[0] = c.rows[1] = c.rows[4] = (uint8_t)ra;
	c.rows[2] = c.rows[3] = c.rows[5] = (uint8_t)(rb ? rb : ra);
	_tile_loadconfig(&c);
}

/* rows of `bytes` bytes from src (stride lds) -> dst (16 rows of 64
 * bytes), zero past `bytes` and past `rows`: a tile's worth of a tail */
static inline void emb_amx_pad(void *dst, const void *src, size_t lds,
                               int rows, int bytes)
{
	memset(dst, 0, 16 * 64);
	for (int r = 0; r < rows; r++)
		memcpy((char *)dst + 64 * r, (const char *)src + (size_t)r * lds,
		       (size_t)bytes);
}

/* the four accumulator tiles -> acc (4 tiles of 16 x 64 bytes) */
static inline void emb_amx_store4(void *acc)
{
	_tile_stored(0, acc, 64);
	_tile_stored(1, (char *)acc + 1024, 64);
	_tile_stored(2, (char *)acc + 2048, 64);
	_tile_stored(3, (char *)acc + 3072, 64);
}

/*
 * Accumulator tile t (0..3) of the block at panel p (of np, n columns;
 * row tiles of ra and rb rows): its first panel *pp, first row *r0
 * (0 or 16), *rows and valid columns *nc; 0 when it holds nothing.
 */
static inline int emb_amx_tile(int t, int p, int np, int n, int ra, int rb,
                               int *pp, int *r0, int *rows, int *nc)
{
	*pp = p + (t & 1);
	*r0 = t < 2 ? 0 : 16;
	*rows = t < 2 ? ra : rb;
	*nc = n - 16 * *pp < 16 ? n - 16 * *pp : 16;
	return *pp < np && *rows > 0;
}

#endif /* EMB_AMX_H */
