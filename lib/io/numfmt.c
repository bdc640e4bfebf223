/*
 * numfmt.c - float32 numbers as JSON text (io/io.h's emb_fmt_f32, the
 * one number formatter of the writers, and numfmt.h's oracle).
 *
 * The rule (both implementations): the shortest decimal that strtof()
 * (round to nearest, ties to even) reads back as exactly v, found by
 * forming, for p = 9, 8, ... significant digits, the correctly rounded
 * (ties to even) p-digit decimal of v and going down while it still
 * reads back as v; 9 digits always do.  The digits are then written as
 * a JSON number, in positional form while the exponent is small
 * (fmt_digits).
 *
 * emb_fmt_f32 does this in exact integer arithmetic: |v| = m * 2^e, the
 * p-digit candidates come from one exact scaling of m by a power of ten
 * (up to 150 bits: a 192-bit integer of a high word and an unsigned
 * __int128), and "reads back as v" is an exact comparison of the
 * candidate with the two midpoints to v's neighbours (a midpoint itself
 * reads back as v when m is even).  emb_fmt_f32_ref is the first
 * implementation, kept as the test oracle: double arithmetic, printf's
 * conversion near ties and strtof on every candidate it cannot decide.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "io/numfmt.h"

typedef unsigned __int128 u128;

/* write digits D (p of them, D[0] at 10^e) as a JSON number */
static size_t fmt_digits(char *out, int neg, const char *d, int p, int e)
{
	char *o = out;
	int i;

	while (p > 1 && d[p - 1] == '0')
		p--;
	if (neg)
		*o++ = '-';
	if (e >= -5 && e < 9 && (e < 0 || e < p + 3)) {
		if (e < 0) {
			*o++ = '0';
			*o++ = '.';
			for (i = -1; i > e; i--)
				*o++ = '0';
			for (i = 0; i < p; i++)
				*o++ = d[i];
		} else {
			for (i = 0; i <= e; i++)
				*o++ = i < p ? d[i] : '0';
			if (p > e + 1) {
				*o++ = '.';
				for (i = e + 1; i < p; i++)
					*o++ = d[i];
			}
		}
	} else {
		int ae = e < 0 ? -e : e;
		*o++ = d[0];
		if (p > 1) {
			*o++ = '.';
			for (i = 1; i < p; i++)
				*o++ = d[i];
		}
		*o++ = 'e';
		*o++ = e < 0 ? '-' : '+';
		if (ae >= 10) {
			*o++ = (char)('0' + ae / 10);
			*o++ = (char)('0' + ae % 10);
		} else {
			*o++ = '0';
			*o++ = (char)('0' + ae);
		}
	}
	*o = 0;
	return (size_t)(o - out);
}

/* the special values: 1 when v is one (out written, *n its length) */
static int fmt_special(char *out, size_t *n, float v)
{
	if (!isfinite(v)) {
		memcpy(out, "null", 5);
		*n = 4;
		return 1;
	}
	if (v == 0) {
		if (signbit(v)) {
			memcpy(out, "-0", 3);
			*n = 2;
		} else {
			memcpy(out, "0", 2);
			*n = 1;
		}
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* exact                                                               */
/* ------------------------------------------------------------------ */

/* a 192-bit unsigned integer: h * 2^128 + l */
typedef struct w192 {
	uint64_t h;
	u128 l;
} w192;

/* 5^k for k in [0, 55] (5^55 < 2^128), from 5^k for k <= 27 (< 2^64) */
static u128 pow5(int k)
{
	static const uint64_t t[28] = {
		1, 5, 25, 125, 625, 3125, 15625, 78125, 390625, 1953125,
		9765625, 48828125, 244140625, 1220703125, 6103515625,
		30517578125, 152587890625, 762939453125, 3814697265625,
		19073486328125, 95367431640625, 476837158203125,
		2384185791015625, 11920928955078125, 59604644775390625,
		298023223876953125, 1490116119384765625,
		7450580596923828125u,
	};

	return k <= 27 ? t[k] : (u128)t[27] * t[k - 27];
}

static w192 mul(u128 a, uint64_t b)
{
	u128 p0 = (u128)(uint64_t)a * b, p1 = (u128)(uint64_t)(a >> 64) * b;
	w192 r;

	r.l = p0 + (p1 << 64);
	r.h = (uint64_t)(p1 >> 64) + (r.l < p0);
	return r;
}

/* v << s, s in [0, 191]; the caller knows the result fits */
static w192 shl(w192 v, int s)
{
	w192 r;

	if (s == 0)
		return v;
	if (s >= 128) {
		r.h = (uint64_t)(v.l << (s - 128));
		r.l = 0;
	} else if (s >= 64) {
		r.h = (uint64_t)(v.l >> (128 - s));
		r.l = v.l << s;
	} else {
		r.h = v.h << s | (uint64_t)(v.l >> (128 - s));
		r.l = v.l << s;
	}
	return r;
}

static int cmp(w192 a, w192 b)
{
	if (a.h != b.h)
		return a.h < b.h ? -1 : 1;
	if (a.l != b.l)
		return a.l < b.l ? -1 : 1;
	return 0;
}

/*
 * sign of n * 10^t - b * 2^y (n < 2^31, b < 2^27): both sides brought
 * to integers (the power of five moves to the side it multiplies) and
 * their powers of two to the smaller one
 */
static int cmp_dec_bin(uint64_t n, int t, uint64_t b, int y)
{
	w192 l = mul(pow5(t > 0 ? t : 0), n), r = mul(pow5(t < 0 ? -t : 0), b);

	return t > y ? cmp(shl(l, t - y), r) : cmp(l, shl(r, y - t));
}

/* 2^k for k in [-1022, 1023] */
static double pow2(int k)
{
	uint64_t b = (uint64_t)(k + 1023) << 52;
	double d;

	memcpy(&d, &b, 8);
	return d;
}

/* floor(x * log10(2)) for |x| < 1650 */
static int log10_pow2(int x)
{
	return (int)(((int64_t)x * 78913) >> 18);
}

static const uint32_t p10u[] = {
	1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
	1000000000u,
};

/* a = m * 2^e > 0 scaled to 9 significant digits */
typedef struct scaled {
	uint32_t n;     /* floor(a * 10^(8 - E)), in [10^8, 10^9) */
	int E;          /* floor(log10 a) */
	int half;       /* the fraction left against 1/2: -1, 0, 1; -2: none */
	double frac;    /* that fraction, to about 2^-53 */
	double delta;   /* half the gap to a's upper neighbour, 2^(e-1),
	                   at the same scale, to about 2^-52 */
} scaled;

static void scale9(scaled *o, uint32_t m, int e)
{
	int bl = 32 - __builtin_clz(m), E = log10_pow2(e + bl - 1), k, s;
	u128 q;

	for (;;) {
		k = 8 - E;
		if (k >= 0) {
			/* a * 10^k = m * 5^k * 2^(e + k) */
			w192 x = mul(pow5(k), m);
			s = -(e + k);
			o->delta = (double)pow5(k) * pow2(e + k - 1);
			if (s <= 0) {
				q = shl(x, -s).l;
				o->half = -2;
				o->frac = 0;
			} else {
				/* q = x >> s (s < 104 here: a >= 2^-149 and
				 * k <= 53), the bits shifted out against 1/2 */
				u128 lo = x.l & (((u128)1 << s) - 1);
				u128 hf = (u128)1 << (s - 1);
				q = x.l >> s | (u128)x.h << (128 - s);
				o->half = lo == 0 ? -2 : lo < hf ? -1 : lo > hf;
				o->frac = (double)lo * pow2(-s);
			}
		} else {
			/* a is an integer here (a >= 10^9 > 2^24) */
			u128 a = (u128)m << e, d = 1, r;
			for (int i = 0; i < -k; i++)
				d *= 10;
			q = a / d;
			r = a - q * d;
			o->half = r == 0 ? -2 : r < d / 2 ? -1 : r > d / 2;
			o->frac = (double)r / (double)d;
			o->delta = pow2(e - 1) / (double)d;
		}
		if (q >= p10u[9]) {     /* E one too small */
			E++;
			continue;
		}
		if (q < p10u[8]) {      /* one too large */
			E--;
			continue;
		}
		o->n = (uint32_t)q;
		o->E = E;
		return;
	}
}

/*
 * the p-digit candidate c (c * 10^(9 - p) at sc's scale) reads back as
 * a = m * 2^e: 1 or 0.  Its distance to a against the half gap on its
 * side (the lower one half as wide when HALF_GAP), in double arithmetic
 * (the distance is at least 1e-8 relative to that gap off by far less
 * than 1e-7) unless it is too close to tell; then exactly, a midpoint
 * reading back as a when m is even.
 */
static int reads_back(const scaled *sc, uint32_t c, int p, uint32_t m, int e,
                      int half_gap)
{
	int64_t d = (int64_t)c * p10u[9 - p] - sc->n;
	double dist = d > 0 ? (double)d - sc->frac : sc->frac - (double)d;
	double gap = d > 0 || !half_gap ? sc->delta : sc->delta / 2;
	int r;

	if (dist < gap * (1 - 1e-6))
		return 1;
	if (dist > gap * (1 + 1e-6))
		return 0;
	/* exactly: c * 10^t against a's midpoint (in units of 2^(e - 2)) */
	if (d > 0) {
		r = cmp_dec_bin(c, sc->E - p + 1, 4 * (uint64_t)m + 2, e - 2);
		return r < 0 || (r == 0 && !(m & 1));
	}
	r = cmp_dec_bin(c, sc->E - p + 1, 4 * (uint64_t)m - (half_gap ? 1 : 2),
	                e - 2);
	return r > 0 || (r == 0 && !(m & 1));
}

size_t emb_fmt_f32(char *out, float v)
{
	char dig[10];
	uint32_t bits, m, n, lo, hv, best;
	int e, p, best_p, half_gap;
	scaled sc;
	size_t len;

	if (fmt_special(out, &len, v))
		return len;
	memcpy(&bits, &v, 4);
	if ((bits >> 23 & 255) == 0) {
		m = bits & 0x7fffff;
		e = -149;
	} else {
		m = (bits & 0x7fffff) | 1u << 23;
		e = (int)(bits >> 23 & 255) - 150;
	}
	/* the gap below a is half the one above at a power of two */
	half_gap = (bits & 0x7fffff) == 0 && (bits >> 23 & 255) > 1;
	scale9(&sc, m, e);
	/* 9 digits always read back */
	best = sc.n + (sc.half > 0 || (sc.half == 0 && (sc.n & 1)));
	best_p = 9;
	for (p = 8; p >= 1; p--) {
		/* the p-digit rounding, ties to even */
		hv = 5 * p10u[8 - p];
		n = sc.n / p10u[9 - p];
		lo = sc.n - n * p10u[9 - p];
		n += lo > hv || (lo == hv && (sc.half > -2 || (n & 1)));
		if (!reads_back(&sc, n, p, m, e, half_gap))
			break;
		best = n;
		best_p = p;
	}
	/* 10^p: 9.99.. rounded up to 10.0.. */
	if (best == p10u[best_p]) {
		best /= 10;
		sc.E++;
	}
	for (int i = best_p - 1; i >= 0; i--, best /= 10)
		dig[i] = (char)('0' + best % 10);
	return fmt_digits(out, bits >> 31, dig, best_p, sc.E);
}

/* ------------------------------------------------------------------ */
/* the oracle                                                          */
/* ------------------------------------------------------------------ */

static const double p10[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
	1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* d * 10^k, k in [-60, 60] */
static double scale10(double d, int k)
{
	while (k > 22) {
		d *= 1e22;
		k -= 22;
	}
	while (k < -22) {
		d /= 1e22;
		k += 22;
	}
	return k >= 0 ? d * p10[k] : d / p10[-k];
}

/*
 * the correctly rounded P-digit decimal of D > 0: digits into dig, and
 * the decimal exponent of the first digit.  The p-digit integer comes
 * from scaling D (exact in a double) by a power of ten in double
 * arithmetic: the relative error is a few 2^-53, far below the 10^-9
 * resolution needed, except when the scaled value lies within 1e-6 of a
 * rounding tie; then printf's exact conversion decides (*kv = INT_MIN).
 */
static void round_p(char *dig, int *exp10, uint64_t *nv, int *kv,
                    double d, int p, int e10)
{
	double sc, fl, frac;
	uint64_t n, lim = (uint64_t)p10[p];
	int i, tries;

	for (tries = 0; tries < 3; tries++) {
		sc = scale10(d, p - 1 - e10);
		if (sc < p10[p - 1] * (1 - 1e-12)) {
			e10--;
			continue;
		}
		if (sc >= p10[p] * (1 + 1e-12)) {
			e10++;
			continue;
		}
		break;
	}
	fl = floor(sc);
	frac = sc - fl;
	if (tries == 3 || fabs(frac - 0.5) < 1e-6 || sc < p10[p - 1] * (1 - 1e-9)) {
		char b[40];
		snprintf(b, sizeof(b), "%.*e", p - 1, d);
		dig[0] = b[0];
		if (p > 1)
			memcpy(dig + 1, b + 2, (size_t)p - 1);
		*exp10 = atoi(strchr(b, 'e') + 1);
		*kv = INT_MIN;
		return;
	}
	n = (uint64_t)fl + (frac > 0.5);
	*nv = n;
	*kv = p - 1 - e10;      /* the candidate is n * 10^-kv */
	if (n >= lim) {         /* 9.99.. rounded up to 10.0.. */
		n /= 10;
		e10++;
	}
	if (n < lim / 10)       /* 0.99.. below the range: cannot happen */
		n = lim / 10;
	for (i = p - 1; i >= 0; i--) {
		dig[i] = (char)('0' + n % 10);
		n /= 10;
	}
	*exp10 = e10;
}

/* 1: n * 10^-k lies strictly inside (lo, hi); 0: outside; -1: too close
 * to a bound to tell in double arithmetic */
static int inside(uint64_t n, int k, double lo, double hi)
{
	double x = (double)n, l = scale10(lo, k), h = scale10(hi, k);

	if (fabs(x - l) < 1e-6 || fabs(x - h) < 1e-6)
		return -1;
	return x > l && x < h;
}

size_t emb_fmt_f32_ref(char *out, float v)
{
	char dig[10], best[10], cand[24];
	int neg, p, best_p, best_e, e10, de, k, in;
	uint64_t n;
	float a, prev, next;
	double d, lo, hi;
	size_t len;

	if (fmt_special(out, &len, v))
		return len;
	neg = v < 0;
	a = fabsf(v);
	d = (double)a;
	/* the decimals that read back as a lie between the midpoints to
	 * its neighbours (exact in double) */
	prev = nextafterf(a, 0.0f);
	next = nextafterf(a, INFINITY);
	lo = ((double)prev + d) / 2;
	hi = isinf(next) ? d + (d - (double)prev) / 2 : (d + (double)next) / 2;
	e10 = (int)floor(log10(d));
	round_p(best, &best_e, &n, &k, d, 9, e10);
	best_p = 9;
	for (p = 8; p >= 1; p--) {
		round_p(dig, &de, &n, &k, d, p, e10);
		in = k == INT_MIN ? -1 : inside(n, k, lo, hi);
		if (in < 0) {
			fmt_digits(cand, 0, dig, p, de);
			in = strtof(cand, NULL) == a;
		}
		if (!in)
			break;
		memcpy(best, dig, (size_t)p);
		best_p = p;
		best_e = de;
	}
	return fmt_digits(out, neg, best, best_p, best_e);
}
