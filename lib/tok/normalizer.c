/*
 * normalizer.c - Unicode predicates, aligned strings, normalizers and
 * pre-tokenizers, with the semantics of Hugging Face tokenizers (Rust).
 *
 * HF tokenizers decides control characters, punctuation and
 * non-spacing marks with the unicode_categories crate, whose tables are
 * older than utf8proc's (a few old So/Mn characters count as
 * punctuation, newer marks and punctuation are unknown to it), and the
 * StripAccents normalizer uses yet another mark predicate.  The range
 * tables below were measured on tokenizers 0.23.2 itself (every code
 * point through BertNormalizer clean_text, BertNormalizer strip_accents,
 * StripAccents and BertPreTokenizer), so they reproduce its behaviour
 * exactly.  Lowercase
 * follows Rust's char::to_lowercase (Unicode 16): utf8proc's simple
 * mapping plus hf_lower_extra (the full mapping of U+0130 and the
 * Unicode 16 additions).  NFD is utf8proc's canonical decomposition and
 * reordering, except the code points in hf_nfd_keep that HF's older
 * normalization tables leave alone.
 */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include "tok/tok-internal.h"

static const uint32_t hf_control[][2] = {
	{0x0, 0x8}, {0xB, 0xC}, {0xE, 0x1F}, {0x7F, 0x9F}, {0xAD, 0xAD},
	{0x600, 0x605}, {0x61C, 0x61C}, {0x6DD, 0x6DD}, {0x70F, 0x70F},
	{0x180E, 0x180E}, {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2064},
	{0x2066, 0x206F}, {0xE000, 0xF8FF}, {0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB},
	{0xFFFD, 0xFFFD}, {0x110BD, 0x110BD}, {0x1BCA0, 0x1BCA3},
	{0x1D173, 0x1D17A}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F},
	{0xF0000, 0xFFFFD}, {0x100000, 0x10FFFD},
};
static const uint32_t hf_nonspacing_mark[][2] = {
	{0x300, 0x36F}, {0x483, 0x487}, {0x591, 0x5BD}, {0x5BF, 0x5BF},
	{0x5C1, 0x5C2}, {0x5C4, 0x5C5}, {0x5C7, 0x5C7}, {0x610, 0x61A},
	{0x64B, 0x65F}, {0x670, 0x670}, {0x6D6, 0x6DC}, {0x6DF, 0x6E4},
	{0x6E7, 0x6E8}, {0x6EA, 0x6ED}, {0x711, 0x711}, {0x730, 0x74A},
	{0x7A6, 0x7B0}, {0x7EB, 0x7F3}, {0x816, 0x819}, {0x81B, 0x823},
	{0x825, 0x827}, {0x829, 0x82D}, {0x859, 0x85B}, {0x8E3, 0x902},
	{0x93A, 0x93A}, {0x93C, 0x93C}, {0x941, 0x948}, {0x94D, 0x94D},
	{0x951, 0x957}, {0x962, 0x963}, {0x981, 0x981}, {0x9BC, 0x9BC},
	{0x9C1, 0x9C4}, {0x9CD, 0x9CD}, {0x9E2, 0x9E3}, {0xA01, 0xA02},
	{0xA3C, 0xA3C}, {0xA41, 0xA42}, {0xA47, 0xA48}, {0xA4B, 0xA4D},
	{0xA51, 0xA51}, {0xA70, 0xA71}, {0xA75, 0xA75}, {0xA81, 0xA82},
	{0xABC, 0xABC}, {0xAC1, 0xAC5}, {0xAC7, 0xAC8}, {0xACD, 0xACD},
	{0xAE2, 0xAE3}, {0xB01, 0xB01}, {0xB3C, 0xB3C}, {0xB3F, 0xB3F},
	{0xB41, 0xB44}, {0xB4D, 0xB4D}, {0xB56, 0xB56}, {0xB62, 0xB63},
	{0xB82, 0xB82}, {0xBC0, 0xBC0}, {0xBCD, 0xBCD}, {0xC00, 0xC00},
	{0xC3E, 0xC40}, {0xC46, 0xC48}, {0xC4A, 0xC4D}, {0xC55, 0xC56},
	{0xC62, 0xC63}, {0xC81, 0xC81}, {0xCBC, 0xCBC}, {0xCBF, 0xCBF},
	{0xCC6, 0xCC6}, {0xCCC, 0xCCD}, {0xCE2, 0xCE3}, {0xD01, 0xD01},
	{0xD41, 0xD44}, {0xD4D, 0xD4D}, {0xD62, 0xD63}, {0xDCA, 0xDCA},
	{0xDD2, 0xDD4}, {0xDD6, 0xDD6}, {0xE31, 0xE31}, {0xE34, 0xE3A},
	{0xE47, 0xE4E}, {0xEB1, 0xEB1}, {0xEB4, 0xEB9}, {0xEBB, 0xEBC},
	{0xEC8, 0xECD}, {0xF18, 0xF19}, {0xF35, 0xF35}, {0xF37, 0xF37},
	{0xF39, 0xF39}, {0xF71, 0xF7E}, {0xF80, 0xF84}, {0xF86, 0xF87},
	{0xF8D, 0xF97}, {0xF99, 0xFBC}, {0xFC6, 0xFC6}, {0x102D, 0x1030},
	{0x1032, 0x1037}, {0x1039, 0x103A}, {0x103D, 0x103E}, {0x1058, 0x1059},
	{0x105E, 0x1060}, {0x1071, 0x1074}, {0x1082, 0x1082}, {0x1085, 0x1086},
	{0x108D, 0x108D}, {0x109D, 0x109D}, {0x135D, 0x135F}, {0x1712, 0x1714},
	{0x1732, 0x1734}, {0x1752, 0x1753}, {0x1772, 0x1773}, {0x17B4, 0x17B5},
	{0x17B7, 0x17BD}, {0x17C6, 0x17C6}, {0x17C9, 0x17D3}, {0x17DD, 0x17DD},
	{0x180B, 0x180D}, {0x18A9, 0x18A9}, {0x1920, 0x1922}, {0x1927, 0x1928},
	{0x1932, 0x1932}, {0x1939, 0x193B}, {0x1A17, 0x1A18}, {0x1A1B, 0x1A1B},
	{0x1A56, 0x1A56}, {0x1A58, 0x1A5E}, {0x1A60, 0x1A60}, {0x1A62, 0x1A62},
	{0x1A65, 0x1A6C}, {0x1A73, 0x1A7C}, {0x1A7F, 0x1A7F}, {0x1AB0, 0x1ABD},
	{0x1B00, 0x1B03}, {0x1B34, 0x1B34}, {0x1B36, 0x1B3A}, {0x1B3C, 0x1B3C},
	{0x1B42, 0x1B42}, {0x1B6B, 0x1B73}, {0x1B80, 0x1B81}, {0x1BA2, 0x1BA5},
	{0x1BA8, 0x1BA9}, {0x1BAB, 0x1BAD}, {0x1BE6, 0x1BE6}, {0x1BE8, 0x1BE9},
	{0x1BED, 0x1BED}, {0x1BEF, 0x1BF1}, {0x1C2C, 0x1C33}, {0x1C36, 0x1C37},
	{0x1CD0, 0x1CD2}, {0x1CD4, 0x1CE0}, {0x1CE2, 0x1CE8}, {0x1CED, 0x1CED},
	{0x1CF4, 0x1CF4}, {0x1CF8, 0x1CF9}, {0x1DC0, 0x1DF5}, {0x1DFC, 0x1DFF},
	{0x20D0, 0x20DC}, {0x20E1, 0x20E1}, {0x20E5, 0x20F0}, {0x2CEF, 0x2CF1},
	{0x2D7F, 0x2D7F}, {0x2DE0, 0x2DFF}, {0x302A, 0x302D}, {0x3099, 0x309A},
	{0xA66F, 0xA66F}, {0xA674, 0xA67D}, {0xA69E, 0xA69F}, {0xA6F0, 0xA6F1},
	{0xA802, 0xA802}, {0xA806, 0xA806}, {0xA80B, 0xA80B}, {0xA825, 0xA826},
	{0xA8C4, 0xA8C4}, {0xA8E0, 0xA8F1}, {0xA926, 0xA92D}, {0xA947, 0xA951},
	{0xA980, 0xA982}, {0xA9B3, 0xA9B3}, {0xA9B6, 0xA9B9}, {0xA9BC, 0xA9BC},
	{0xA9E5, 0xA9E5}, {0xAA29, 0xAA2E}, {0xAA31, 0xAA32}, {0xAA35, 0xAA36},
	{0xAA43, 0xAA43}, {0xAA4C, 0xAA4C}, {0xAA7C, 0xAA7C}, {0xAAB0, 0xAAB0},
	{0xAAB2, 0xAAB4}, {0xAAB7, 0xAAB8}, {0xAABE, 0xAABF}, {0xAAC1, 0xAAC1},
	{0xAAEC, 0xAAED}, {0xAAF6, 0xAAF6}, {0xABE5, 0xABE5}, {0xABE8, 0xABE8},
	{0xABED, 0xABED}, {0xFB1E, 0xFB1E}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F},
	{0x101FD, 0x101FD}, {0x102E0, 0x102E0}, {0x10376, 0x1037A},
	{0x10A01, 0x10A03}, {0x10A05, 0x10A06}, {0x10A0C, 0x10A0F},
	{0x10A38, 0x10A3A}, {0x10A3F, 0x10A3F}, {0x10AE5, 0x10AE6},
	{0x11001, 0x11001}, {0x11038, 0x11046}, {0x1107F, 0x11081},
	{0x110B3, 0x110B6}, {0x110B9, 0x110BA}, {0x11100, 0x11102},
	{0x11127, 0x1112B}, {0x1112D, 0x11134}, {0x11173, 0x11173},
	{0x11180, 0x11181}, {0x111B6, 0x111BE}, {0x111CA, 0x111CC},
	{0x1122F, 0x11231}, {0x11234, 0x11234}, {0x11236, 0x11237},
	{0x112DF, 0x112DF}, {0x112E3, 0x112EA}, {0x11300, 0x11301},
	{0x1133C, 0x1133C}, {0x11340, 0x11340}, {0x11366, 0x1136C},
	{0x11370, 0x11374}, {0x114B3, 0x114B8}, {0x114BA, 0x114BA},
	{0x114BF, 0x114C0}, {0x114C2, 0x114C3}, {0x115B2, 0x115B5},
	{0x115BC, 0x115BD}, {0x115BF, 0x115C0}, {0x115DC, 0x115DD},
	{0x11633, 0x1163A}, {0x1163D, 0x1163D}, {0x1163F, 0x11640},
	{0x116AB, 0x116AB}, {0x116AD, 0x116AD}, {0x116B0, 0x116B5},
	{0x116B7, 0x116B7}, {0x1171D, 0x1171F}, {0x11722, 0x11725},
	{0x11727, 0x1172B}, {0x16AF0, 0x16AF4}, {0x16B30, 0x16B36},
	{0x16F8F, 0x16F92}, {0x1BC9D, 0x1BC9E}, {0x1D167, 0x1D169},
	{0x1D17B, 0x1D182}, {0x1D185, 0x1D18B}, {0x1D1AA, 0x1D1AD},
	{0x1D242, 0x1D244}, {0x1DA00, 0x1DA36}, {0x1DA3B, 0x1DA6C},
	{0x1DA75, 0x1DA75}, {0x1DA84, 0x1DA84}, {0x1DA9B, 0x1DA9F},
	{0x1DAA1, 0x1DAAF}, {0x1E8D0, 0x1E8D6}, {0xE0100, 0xE01EF},
};

/* StripAccents: its own predicate (Mn, Mc and Me as of its tables) */
static const uint32_t hf_combining_mark[][2] = {
	{0x300, 0x36F}, {0x483, 0x489}, {0x591, 0x5BD}, {0x5BF, 0x5BF},
	{0x5C1, 0x5C2}, {0x5C4, 0x5C5}, {0x5C7, 0x5C7}, {0x610, 0x61A},
	{0x64B, 0x65F}, {0x670, 0x670}, {0x6D6, 0x6DC}, {0x6DF, 0x6E4},
	{0x6E7, 0x6E8}, {0x6EA, 0x6ED}, {0x711, 0x711}, {0x730, 0x74A},
	{0x7A6, 0x7B0}, {0x7EB, 0x7F3}, {0x816, 0x819}, {0x81B, 0x823},
	{0x825, 0x827}, {0x829, 0x82D}, {0x859, 0x85B}, {0x8D4, 0x8E1},
	{0x8E3, 0x903}, {0x93A, 0x93C}, {0x93E, 0x94F}, {0x951, 0x957},
	{0x962, 0x963}, {0x981, 0x983}, {0x9BC, 0x9BC}, {0x9BE, 0x9C4},
	{0x9C7, 0x9C8}, {0x9CB, 0x9CD}, {0x9D7, 0x9D7}, {0x9E2, 0x9E3},
	{0xA01, 0xA03}, {0xA3C, 0xA3C}, {0xA3E, 0xA42}, {0xA47, 0xA48},
	{0xA4B, 0xA4D}, {0xA51, 0xA51}, {0xA70, 0xA71}, {0xA75, 0xA75},
	{0xA81, 0xA83}, {0xABC, 0xABC}, {0xABE, 0xAC5}, {0xAC7, 0xAC9},
	{0xACB, 0xACD}, {0xAE2, 0xAE3}, {0xB01, 0xB03}, {0xB3C, 0xB3C},
	{0xB3E, 0xB44}, {0xB47, 0xB48}, {0xB4B, 0xB4D}, {0xB56, 0xB57},
	{0xB62, 0xB63}, {0xB82, 0xB82}, {0xBBE, 0xBC2}, {0xBC6, 0xBC8},
	{0xBCA, 0xBCD}, {0xBD7, 0xBD7}, {0xC00, 0xC03}, {0xC3E, 0xC44},
	{0xC46, 0xC48}, {0xC4A, 0xC4D}, {0xC55, 0xC56}, {0xC62, 0xC63},
	{0xC81, 0xC83}, {0xCBC, 0xCBC}, {0xCBE, 0xCC4}, {0xCC6, 0xCC8},
	{0xCCA, 0xCCD}, {0xCD5, 0xCD6}, {0xCE2, 0xCE3}, {0xD01, 0xD03},
	{0xD3E, 0xD44}, {0xD46, 0xD48}, {0xD4A, 0xD4D}, {0xD57, 0xD57},
	{0xD62, 0xD63}, {0xD82, 0xD83}, {0xDCA, 0xDCA}, {0xDCF, 0xDD4},
	{0xDD6, 0xDD6}, {0xDD8, 0xDDF}, {0xDF2, 0xDF3}, {0xE31, 0xE31},
	{0xE34, 0xE3A}, {0xE47, 0xE4E}, {0xEB1, 0xEB1}, {0xEB4, 0xEB9},
	{0xEBB, 0xEBC}, {0xEC8, 0xECD}, {0xF18, 0xF19}, {0xF35, 0xF35},
	{0xF37, 0xF37}, {0xF39, 0xF39}, {0xF3E, 0xF3F}, {0xF71, 0xF84},
	{0xF86, 0xF87}, {0xF8D, 0xF97}, {0xF99, 0xFBC}, {0xFC6, 0xFC6},
	{0x102B, 0x103E}, {0x1056, 0x1059}, {0x105E, 0x1060}, {0x1062, 0x1064},
	{0x1067, 0x106D}, {0x1071, 0x1074}, {0x1082, 0x108D}, {0x108F, 0x108F},
	{0x109A, 0x109D}, {0x135D, 0x135F}, {0x1712, 0x1714}, {0x1732, 0x1734},
	{0x1752, 0x1753}, {0x1772, 0x1773}, {0x17B4, 0x17D3}, {0x17DD, 0x17DD},
	{0x180B, 0x180D}, {0x1885, 0x1886}, {0x18A9, 0x18A9}, {0x1920, 0x192B},
	{0x1930, 0x193B}, {0x1A17, 0x1A1B}, {0x1A55, 0x1A5E}, {0x1A60, 0x1A7C},
	{0x1A7F, 0x1A7F}, {0x1AB0, 0x1ABE}, {0x1B00, 0x1B04}, {0x1B34, 0x1B44},
	{0x1B6B, 0x1B73}, {0x1B80, 0x1B82}, {0x1BA1, 0x1BAD}, {0x1BE6, 0x1BF3},
	{0x1C24, 0x1C37}, {0x1CD0, 0x1CD2}, {0x1CD4, 0x1CE8}, {0x1CED, 0x1CED},
	{0x1CF2, 0x1CF4}, {0x1CF8, 0x1CF9}, {0x1DC0, 0x1DF5}, {0x1DFB, 0x1DFF},
	{0x20D0, 0x20F0}, {0x2CEF, 0x2CF1}, {0x2D7F, 0x2D7F}, {0x2DE0, 0x2DFF},
	{0x302A, 0x302F}, {0x3099, 0x309A}, {0xA66F, 0xA672}, {0xA674, 0xA67D},
	{0xA69E, 0xA69F}, {0xA6F0, 0xA6F1}, {0xA802, 0xA802}, {0xA806, 0xA806},
	{0xA80B, 0xA80B}, {0xA823, 0xA827}, {0xA880, 0xA881}, {0xA8B4, 0xA8C5},
	{0xA8E0, 0xA8F1}, {0xA926, 0xA92D}, {0xA947, 0xA953}, {0xA980, 0xA983},
	{0xA9B3, 0xA9C0}, {0xA9E5, 0xA9E5}, {0xAA29, 0xAA36}, {0xAA43, 0xAA43},
	{0xAA4C, 0xAA4D}, {0xAA7B, 0xAA7D}, {0xAAB0, 0xAAB0}, {0xAAB2, 0xAAB4},
	{0xAAB7, 0xAAB8}, {0xAABE, 0xAABF}, {0xAAC1, 0xAAC1}, {0xAAEB, 0xAAEF},
	{0xAAF5, 0xAAF6}, {0xABE3, 0xABEA}, {0xABEC, 0xABED}, {0xFB1E, 0xFB1E},
	{0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0x101FD, 0x101FD}, {0x102E0, 0x102E0},
	{0x10376, 0x1037A}, {0x10A01, 0x10A03}, {0x10A05, 0x10A06},
	{0x10A0C, 0x10A0F}, {0x10A38, 0x10A3A}, {0x10A3F, 0x10A3F},
	{0x10AE5, 0x10AE6}, {0x11000, 0x11002}, {0x11038, 0x11046},
	{0x1107F, 0x11082}, {0x110B0, 0x110BA}, {0x11100, 0x11102},
	{0x11127, 0x11134}, {0x11173, 0x11173}, {0x11180, 0x11182},
	{0x111B3, 0x111C0}, {0x111CA, 0x111CC}, {0x1122C, 0x11237},
	{0x1123E, 0x1123E}, {0x112DF, 0x112EA}, {0x11300, 0x11303},
	{0x1133C, 0x1133C}, {0x1133E, 0x11344}, {0x11347, 0x11348},
	{0x1134B, 0x1134D}, {0x11357, 0x11357}, {0x11362, 0x11363},
	{0x11366, 0x1136C}, {0x11370, 0x11374}, {0x11435, 0x11446},
	{0x114B0, 0x114C3}, {0x115AF, 0x115B5}, {0x115B8, 0x115C0},
	{0x115DC, 0x115DD}, {0x11630, 0x11640}, {0x116AB, 0x116B7},
	{0x1171D, 0x1172B}, {0x11C2F, 0x11C36}, {0x11C38, 0x11C3F},
	{0x11C92, 0x11CA7}, {0x11CA9, 0x11CB6}, {0x16AF0, 0x16AF4},
	{0x16B30, 0x16B36}, {0x16F51, 0x16F7E}, {0x16F8F, 0x16F92},
	{0x1BC9D, 0x1BC9E}, {0x1D165, 0x1D169}, {0x1D16D, 0x1D172},
	{0x1D17B, 0x1D182}, {0x1D185, 0x1D18B}, {0x1D1AA, 0x1D1AD},
	{0x1D242, 0x1D244}, {0x1DA00, 0x1DA36}, {0x1DA3B, 0x1DA6C},
	{0x1DA75, 0x1DA75}, {0x1DA84, 0x1DA84}, {0x1DA9B, 0x1DA9F},
	{0x1DAA1, 0x1DAAF}, {0x1E000, 0x1E006}, {0x1E008, 0x1E018},
	{0x1E01B, 0x1E021}, {0x1E023, 0x1E024}, {0x1E026, 0x1E02A},
	{0x1E8D0, 0x1E8D6}, {0x1E944, 0x1E94A}, {0xE0100, 0xE01EF},
};
static const uint32_t hf_punctuation[][2] = {
	{0x21, 0x2F}, {0x3A, 0x40}, {0x5B, 0x60}, {0x7B, 0x7E}, {0xA1, 0xA1},
	{0xA7, 0xA7}, {0xAB, 0xAB}, {0xB6, 0xB7}, {0xBB, 0xBB}, {0xBF, 0xBF},
	{0x37E, 0x37E}, {0x387, 0x387}, {0x55A, 0x55F}, {0x589, 0x58A},
	{0x5BE, 0x5BE}, {0x5C0, 0x5C0}, {0x5C3, 0x5C3}, {0x5C6, 0x5C6},
	{0x5F3, 0x5F4}, {0x609, 0x60A}, {0x60C, 0x60D}, {0x61B, 0x61B},
	{0x61E, 0x61F}, {0x66A, 0x66D}, {0x6D4, 0x6D4}, {0x700, 0x70D},
	{0x7F7, 0x7F9}, {0x830, 0x83E}, {0x85E, 0x85E}, {0x964, 0x965},
	{0x970, 0x970}, {0xAF0, 0xAF0}, {0xDF4, 0xDF4}, {0xE4F, 0xE4F},
	{0xE5A, 0xE5B}, {0xF04, 0xF12}, {0xF14, 0xF14}, {0xF3A, 0xF3D},
	{0xF85, 0xF85}, {0xFD0, 0xFD4}, {0xFD9, 0xFDA}, {0x104A, 0x104F},
	{0x10FB, 0x10FB}, {0x1360, 0x1368}, {0x1400, 0x1400}, {0x166D, 0x166E},
	{0x169B, 0x169C}, {0x16EB, 0x16ED}, {0x1735, 0x1736}, {0x17D4, 0x17D6},
	{0x17D8, 0x17DA}, {0x1800, 0x180A}, {0x1944, 0x1945}, {0x1A1E, 0x1A1F},
	{0x1AA0, 0x1AA6}, {0x1AA8, 0x1AAD}, {0x1B5A, 0x1B60}, {0x1BFC, 0x1BFF},
	{0x1C3B, 0x1C3F}, {0x1C7E, 0x1C7F}, {0x1CC0, 0x1CC7}, {0x1CD3, 0x1CD3},
	{0x2010, 0x2027}, {0x2030, 0x2043}, {0x2045, 0x2051}, {0x2053, 0x205E},
	{0x207D, 0x207E}, {0x208D, 0x208E}, {0x2308, 0x230B}, {0x2329, 0x232A},
	{0x2768, 0x2775}, {0x27C5, 0x27C6}, {0x27E6, 0x27EF}, {0x2983, 0x2998},
	{0x29D8, 0x29DB}, {0x29FC, 0x29FD}, {0x2CF9, 0x2CFC}, {0x2CFE, 0x2CFF},
	{0x2D70, 0x2D70}, {0x2E00, 0x2E2E}, {0x2E30, 0x2E42}, {0x3001, 0x3003},
	{0x3008, 0x3011}, {0x3014, 0x301F}, {0x3030, 0x3030}, {0x303D, 0x303D},
	{0x30A0, 0x30A0}, {0x30FB, 0x30FB}, {0xA4FE, 0xA4FF}, {0xA60D, 0xA60F},
	{0xA673, 0xA673}, {0xA67E, 0xA67E}, {0xA6F2, 0xA6F7}, {0xA874, 0xA877},
	{0xA8CE, 0xA8CF}, {0xA8F8, 0xA8FA}, {0xA8FC, 0xA8FC}, {0xA92E, 0xA92F},
	{0xA95F, 0xA95F}, {0xA9C1, 0xA9CD}, {0xA9DE, 0xA9DF}, {0xAA5C, 0xAA5F},
	{0xAADE, 0xAADF}, {0xAAF0, 0xAAF1}, {0xABEB, 0xABEB}, {0xFD3E, 0xFD3F},
	{0xFE10, 0xFE19}, {0xFE30, 0xFE52}, {0xFE54, 0xFE61}, {0xFE63, 0xFE63},
	{0xFE68, 0xFE68}, {0xFE6A, 0xFE6B}, {0xFF01, 0xFF03}, {0xFF05, 0xFF0A},
	{0xFF0C, 0xFF0F}, {0xFF1A, 0xFF1B}, {0xFF1F, 0xFF20}, {0xFF3B, 0xFF3D},
	{0xFF3F, 0xFF3F}, {0xFF5B, 0xFF5B}, {0xFF5D, 0xFF5D}, {0xFF5F, 0xFF65},
	{0x10100, 0x10102}, {0x1039F, 0x1039F}, {0x103D0, 0x103D0},
	{0x1056F, 0x1056F}, {0x10857, 0x10857}, {0x1091F, 0x1091F},
	{0x1093F, 0x1093F}, {0x10A50, 0x10A58}, {0x10A7F, 0x10A7F},
	{0x10AF0, 0x10AF6}, {0x10B39, 0x10B3F}, {0x10B99, 0x10B9C},
	{0x11047, 0x1104D}, {0x110BB, 0x110BC}, {0x110BE, 0x110C1},
	{0x11140, 0x11143}, {0x11174, 0x11175}, {0x111C5, 0x111C9},
	{0x111CD, 0x111CD}, {0x111DB, 0x111DB}, {0x111DD, 0x111DF},
	{0x11238, 0x1123D}, {0x112A9, 0x112A9}, {0x114C6, 0x114C6},
	{0x115C1, 0x115D7}, {0x11641, 0x11643}, {0x1173C, 0x1173E},
	{0x12470, 0x12474}, {0x16A6E, 0x16A6F}, {0x16AF5, 0x16AF5},
	{0x16B37, 0x16B3B}, {0x16B44, 0x16B44}, {0x1BC9F, 0x1BC9F},
	{0x1DA87, 0x1DA8B},
};
static const uint32_t hf_lower_extra[][3] = {
	{0x130, 0x69, 0x307},
	{0x1C89, 0x1C8A, 0x0},
	{0xA7CB, 0x264, 0x0},
	{0xA7CC, 0xA7CD, 0x0},
	{0xA7CE, 0xA7CF, 0x0},
	{0xA7D2, 0xA7D3, 0x0},
	{0xA7D4, 0xA7D5, 0x0},
	{0xA7DA, 0xA7DB, 0x0},
	{0xA7DC, 0x19B, 0x0},
	{0x10D50, 0x10D70, 0x0},
	{0x10D51, 0x10D71, 0x0},
	{0x10D52, 0x10D72, 0x0},
	{0x10D53, 0x10D73, 0x0},
	{0x10D54, 0x10D74, 0x0},
	{0x10D55, 0x10D75, 0x0},
	{0x10D56, 0x10D76, 0x0},
	{0x10D57, 0x10D77, 0x0},
	{0x10D58, 0x10D78, 0x0},
	{0x10D59, 0x10D79, 0x0},
	{0x10D5A, 0x10D7A, 0x0},
	{0x10D5B, 0x10D7B, 0x0},
	{0x10D5C, 0x10D7C, 0x0},
	{0x10D5D, 0x10D7D, 0x0},
	{0x10D5E, 0x10D7E, 0x0},
	{0x10D5F, 0x10D7F, 0x0},
	{0x10D60, 0x10D80, 0x0},
	{0x10D61, 0x10D81, 0x0},
	{0x10D62, 0x10D82, 0x0},
	{0x10D63, 0x10D83, 0x0},
	{0x10D64, 0x10D84, 0x0},
	{0x10D65, 0x10D85, 0x0},
	{0x16EA0, 0x16EBB, 0x0},
	{0x16EA1, 0x16EBC, 0x0},
	{0x16EA2, 0x16EBD, 0x0},
	{0x16EA3, 0x16EBE, 0x0},
	{0x16EA4, 0x16EBF, 0x0},
	{0x16EA5, 0x16EC0, 0x0},
	{0x16EA6, 0x16EC1, 0x0},
	{0x16EA7, 0x16EC2, 0x0},
	{0x16EA8, 0x16EC3, 0x0},
	{0x16EA9, 0x16EC4, 0x0},
	{0x16EAA, 0x16EC5, 0x0},
	{0x16EAB, 0x16EC6, 0x0},
	{0x16EAC, 0x16EC7, 0x0},
	{0x16EAD, 0x16EC8, 0x0},
	{0x16EAE, 0x16EC9, 0x0},
	{0x16EAF, 0x16ECA, 0x0},
	{0x16EB0, 0x16ECB, 0x0},
	{0x16EB1, 0x16ECC, 0x0},
	{0x16EB2, 0x16ECD, 0x0},
	{0x16EB3, 0x16ECE, 0x0},
	{0x16EB4, 0x16ECF, 0x0},
	{0x16EB5, 0x16ED0, 0x0},
	{0x16EB6, 0x16ED1, 0x0},
	{0x16EB7, 0x16ED2, 0x0},
	{0x16EB8, 0x16ED3, 0x0},
};

/* measured on tokenizers 0.23.2 (its NFKD and NFC normalizers over
 * U+00A0..U+3FFFF, bench/unicode-sweep.js): */
/* compatibility decompositions that HF's (older) NFKD tables lack */
static const uint32_t hf_nfkd_keep[][2] = {
	{0x32FF, 0x32FF}, {0xA7F2, 0xA7F4}, {0xAB69, 0xAB69}, {0x10781, 0x10785},
	{0x10787, 0x107B0}, {0x107B2, 0x107BA}, {0x1E030, 0x1E06D},
	{0x1F16C, 0x1F16C}, {0x1FBF0, 0x1FBF9},
};
/* composites utf8proc recomposes that HF's NFC leaves decomposed */
static const uint32_t hf_comp_excl[][2] = {
	{0x2ADC, 0x2ADC}, {0x1D15E, 0x1D164}, {0x1D1BB, 0x1D1C0},
};
/* code points whose decomposition HF's NFD tables do not have */
static const uint32_t hf_nfd_keep[] = { 0x11938 };

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static int in_ranges(const uint32_t (*r)[2], size_t n, uint32_t c)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c < r[mid][0])
			hi = mid;
		else if (c > r[mid][1])
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

int tk_is_whitespace(uint32_t c)
{
	if (c < 0x80)
		return c == ' ' || (c >= 0x09 && c <= 0x0d);
	switch (c) {
	case 0x85: case 0xa0: case 0x1680: case 0x2028: case 0x2029:
	case 0x202f: case 0x205f: case 0x3000:
		return 1;
	}
	return c >= 0x2000 && c <= 0x200a;
}

int tk_is_control(uint32_t c)
{
	return in_ranges(hf_control, NELEM(hf_control), c);
}

int tk_is_bert_punct(uint32_t c)
{
	return in_ranges(hf_punctuation, NELEM(hf_punctuation), c);
}

int tk_is_nonspacing_mark(uint32_t c)
{
	return c >= 0x300 &&
	       in_ranges(hf_nonspacing_mark, NELEM(hf_nonspacing_mark), c);
}

int tk_is_combining_mark(uint32_t c)
{
	return c >= 0x300 &&
	       in_ranges(hf_combining_mark, NELEM(hf_combining_mark), c);
}

int tk_is_chinese(uint32_t c)
{
	return (c >= 0x4e00 && c <= 0x9fff) || (c >= 0x3400 && c <= 0x4dbf) ||
	       (c >= 0x20000 && c <= 0x2a6df) ||
	       (c >= 0x2a700 && c <= 0x2b81f) ||
	       (c >= 0x2b920 && c <= 0x2ceaf) ||
	       (c >= 0xf900 && c <= 0xfaff) || (c >= 0x2f800 && c <= 0x2fa1f);
}

int tk_tolower(uint32_t out[3], uint32_t c)
{
	size_t lo = 0, hi = NELEM(hf_lower_extra);

	if (c < 0x80) {
		out[0] = c >= 'A' && c <= 'Z' ? c + 32 : c;
		return 1;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c < hf_lower_extra[mid][0]) {
			hi = mid;
		} else if (c > hf_lower_extra[mid][0]) {
			lo = mid + 1;
		} else {
			out[0] = hf_lower_extra[mid][1];
			if (!hf_lower_extra[mid][2])
				return 1;
			out[1] = hf_lower_extra[mid][2];
			return 2;
		}
	}
	out[0] = (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
	return 1;
}

/* ------------------------------------------------------------------ */
/* aligned strings                                                     */

void tk_str_release(tk_str *s)
{
	free(s->c);
	free(s->o);
	memset(s, 0, sizeof(*s));
}

int tk_str_reserve(tk_str *s, size_t n)
{
	size_t cap;
	uint32_t *c;
	int32_t *o;

	if (n <= s->cap)
		return 0;
	cap = s->cap ? s->cap : 64;
	while (cap < n) {
		if (cap > SIZE_MAX / 16)
			return -1;
		cap *= 2;
	}
	c = realloc(s->c, cap * sizeof(*c));
	if (!c)
		return -1;
	s->c = c;
	o = realloc(s->o, cap * 2 * sizeof(*o));
	if (!o)
		return -1;
	s->o = o;
	s->cap = cap;
	return 0;
}

int tk_str_push(tk_str *s, uint32_t c, int32_t os, int32_t oe)
{
	if (s->n == s->cap && tk_str_reserve(s, s->n + 1) < 0)
		return -1;
	tk_str_put(s, c, os, oe);
	return 0;
}

int tk_spans_push(tk_spans *s, size_t a, size_t b)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		tk_span *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n].a = a;
	s->v[s->n].b = b;
	s->n++;
	return 0;
}

void tk_spans_release(tk_spans *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* decode one code point at s[i..len); returns its length, 0 if invalid */
static size_t utf8_next(uint32_t *cp, const unsigned char *s, size_t i,
                        size_t len)
{
	unsigned char b = s[i];
	uint32_t c;
	size_t n, k;

	if (b < 0x80) {
		*cp = b;
		return 1;
	} else if (b >= 0xc2 && b <= 0xdf) {
		n = 2;
		c = b & 0x1f;
	} else if (b >= 0xe0 && b <= 0xef) {
		n = 3;
		c = b & 0x0f;
	} else if (b >= 0xf0 && b <= 0xf4) {
		n = 4;
		c = b & 0x07;
	} else {
		return 0;
	}
	if (len - i < n)
		return 0;
	for (k = 1; k < n; k++) {
		if ((s[i + k] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i + k] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

int tk_utf8_decode(tk_str *out, const char *s, size_t len, emb_err *err)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;
	uint32_t c;

	out->n = 0;
	if (len > (size_t)INT32_MAX)
		return emb_err_set(err, "text too long (%zu bytes)", len);
	if (tk_str_reserve(out, len + 1) < 0)
		return emb_err_set(err, "out of memory");
	while (i < len) {
		k = utf8_next(&c, u, i, len);
		if (!k)
			return emb_err_set(err, "invalid UTF-8 at byte %zu", i);
		tk_str_put(out, c, (int32_t)out->n, (int32_t)out->n + 1);
		i += k;
	}
	return 0;
}

size_t tk_utf8_put(char *p, uint32_t c)
{
	if (c < 0x80) {
		p[0] = (char)c;
		return 1;
	} else if (c < 0x800) {
		p[0] = (char)(0xc0 | (c >> 6));
		p[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	} else if (c < 0x10000) {
		p[0] = (char)(0xe0 | (c >> 12));
		p[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		p[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	p[0] = (char)(0xf0 | (c >> 18));
	p[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	p[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	p[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* ------------------------------------------------------------------ */
/* normalizer steps: each maps s to tmp, then swaps them               */

static void swap_str(tk_str *a, tk_str *b)
{
	tk_str t = *a;
	*a = *b;
	*b = t;
}

static int clean_text(tk_str *s, tk_str *t)
{
	size_t i;

	t->n = 0;
	if (tk_str_reserve(t, s->n) < 0)
		return -1;
	for (i = 0; i < s->n; i++) {
		uint32_t c = s->c[i];
		if (c == 0 || c == 0xfffd || tk_is_control(c))
			continue;
		tk_str_put(t, tk_is_whitespace(c) ? ' ' : c, s->o[2 * i],
		           s->o[2 * i + 1]);
	}
	swap_str(s, t);
	return 0;
}

/* HF: [(' ', 0), (c, 1), (' ', 1)]: all three align to c */
static int pad_chinese(tk_str *s, tk_str *t)
{
	size_t i, n = 0;

	for (i = 0; i < s->n; i++)
		n += tk_is_chinese(s->c[i]) ? 3 : 1;
	t->n = 0;
	if (tk_str_reserve(t, n) < 0)
		return -1;
	for (i = 0; i < s->n; i++) {
		int32_t a = s->o[2 * i], b = s->o[2 * i + 1];
		if (tk_is_chinese(s->c[i])) {
			tk_str_put(t, ' ', a, b);
			tk_str_put(t, s->c[i], a, b);
			tk_str_put(t, ' ', a, b);
		} else {
			tk_str_put(t, s->c[i], a, b);
		}
	}
	swap_str(s, t);
	return 0;
}

static int nfd_keep(uint32_t c)
{
	size_t i;

	for (i = 0; i < NELEM(hf_nfd_keep); i++)
		if (hf_nfd_keep[i] == c)
			return 1;
	return 0;
}

/* canonical combining class, 0 for the marks HF's (older) normalization
 * tables do not know: they do not reorder */
static int ccc(uint32_t c)
{
	if (c < 0x300 || !tk_is_combining_mark(c))
		return 0;
	return utf8proc_get_property((utf8proc_int32_t)c)->combining_class;
}

/*
 * Canonical decomposition, then canonical ordering of combining marks
 * (stable sort by combining class within each run of nonzero classes).
 * Alignments as HF's NormalizedString::nfd: each output character is
 * flagged "first of its decomposition" or "inserted"; the flags move
 * with the reordered marks, then a first character takes the alignment
 * of the next input character and an inserted one that of the output
 * character before it.
 */
static int nfd(tk_str *s, tk_str *t, int compat)
{
	size_t i, j, cur;
	utf8proc_int32_t buf[32];
	uint32_t fast = compat ? 0xa0 : 0xc0;

	t->n = 0;
	if (tk_str_reserve(t, s->n) < 0)
		return -1;
	for (i = 0; i < s->n; i++) {
		uint32_t c = s->c[i];
		utf8proc_ssize_t n, k;
		int last = 0;

		if (c < fast || nfd_keep(c) ||
		    (compat && in_ranges(hf_nfkd_keep, NELEM(hf_nfkd_keep), c))) {
			if (tk_str_push(t, c, 0, 0) < 0)
				return -1;
			continue;
		}
		n = utf8proc_decompose_char((utf8proc_int32_t)c, buf, 32,
		                            compat ? UTF8PROC_DECOMPOSE |
		                                     UTF8PROC_COMPAT
		                                   : UTF8PROC_DECOMPOSE, &last);
		if (n < 1 || n > 32) {
			buf[0] = (utf8proc_int32_t)c;
			n = 1;
		}
		if (tk_str_reserve(t, t->n + (size_t)n) < 0)
			return -1;
		for (k = 0; k < n; k++)
			tk_str_put(t, (uint32_t)buf[k], k > 0, 0);
	}
	/* canonical ordering: insertion sort inside runs of ccc > 0 */
	for (i = 1; i < t->n; i++) {
		int ci = ccc(t->c[i]);
		if (!ci)
			continue;
		for (j = i; j > 0; j--) {
			int cj = ccc(t->c[j - 1]);
			uint32_t tc;
			int32_t tf;
			if (!cj || cj <= ci)
				break;
			tc = t->c[j];
			t->c[j] = t->c[j - 1];
			t->c[j - 1] = tc;
			tf = t->o[2 * j];
			t->o[2 * j] = t->o[2 * j - 2];
			t->o[2 * j - 2] = tf;
		}
	}
	/* alignments from the flags */
	for (i = 0, cur = 0; i < t->n; i++) {
		size_t from;
		if (!t->o[2 * i] && cur < s->n) {
			from = cur++;
			t->o[2 * i] = s->o[2 * from];
			t->o[2 * i + 1] = s->o[2 * from + 1];
		} else if (i > 0) {
			t->o[2 * i] = t->o[2 * i - 2];
			t->o[2 * i + 1] = t->o[2 * i - 1];
		} else {
			t->o[0] = s->n ? s->o[0] : 0;
			t->o[1] = s->n ? s->o[1] : 0;
		}
	}
	swap_str(s, t);
	return 0;
}

static int strip_marks(tk_str *s, int (*is_mark)(uint32_t))
{
	size_t i, n = 0;

	for (i = 0; i < s->n; i++) {
		if (is_mark(s->c[i]))
			continue;
		s->c[n] = s->c[i];
		s->o[2 * n] = s->o[2 * i];
		s->o[2 * n + 1] = s->o[2 * i + 1];
		n++;
	}
	s->n = n;
	return 0;
}

static int lowercase(tk_str *s, tk_str *t)
{
	size_t i;
	uint32_t lc[3];

	t->n = 0;
	if (tk_str_reserve(t, s->n) < 0)
		return -1;
	for (i = 0; i < s->n; i++) {
		int k, n = tk_tolower(lc, s->c[i]);
		if (tk_str_reserve(t, t->n + (size_t)n) < 0)
			return -1;
		for (k = 0; k < n; k++)
			tk_str_put(t, lc[k], s->o[2 * i], s->o[2 * i + 1]);
	}
	swap_str(s, t);
	return 0;
}

/*
 * Canonical composition of the decomposed S (NFC = NFD + this, NFKC =
 * NFKD + this) by utf8proc.  Alignments: each output character covers
 * as many input characters as its canonical decomposition has (NFD of
 * the composed text is the decomposed input, in order), and takes the
 * alignment of the first of them, as HF gives a composed character
 * the alignment of its first part.
 */
static int compose(tk_str *s, tk_str *t)
{
	utf8proc_int32_t *buf, dec[32];
	utf8proc_ssize_t n;
	size_t i, cur = 0;

	if (!s->n)
		return 0;
	buf = malloc(s->n * sizeof(*buf));
	if (!buf)
		return -1;
	for (i = 0; i < s->n; i++)
		buf[i] = (utf8proc_int32_t)s->c[i];
	n = utf8proc_normalize_utf32(buf, (utf8proc_ssize_t)s->n,
	                             UTF8PROC_COMPOSE);
	if (n < 0 || (size_t)n > s->n) {
		free(buf);
		return 0;   /* leave it decomposed */
	}
	t->n = 0;
	if (tk_str_reserve(t, s->n) < 0) {
		free(buf);
		return -1;
	}
	for (i = 0; i < (size_t)n; i++) {
		uint32_t c = (uint32_t)buf[i];
		int last = 0;
		utf8proc_ssize_t l = 1;
		size_t at = cur < s->n ? cur : s->n - 1;
		if (c >= 0xc0 && !nfd_keep(c)) {
			l = utf8proc_decompose_char(buf[i], dec, 32,
			                            UTF8PROC_DECOMPOSE, &last);
			if (l < 1)
				l = 1;
		}
		if (in_ranges(hf_comp_excl, NELEM(hf_comp_excl), c) && l > 1) {
			/* HF leaves it decomposed: the input characters */
			utf8proc_ssize_t k;
			if (tk_str_reserve(t, t->n + (size_t)l) < 0) {
				free(buf);
				return -1;
			}
			for (k = 0; k < l && cur + (size_t)k < s->n; k++)
				tk_str_put(t, s->c[cur + k], s->o[2 * (cur + k)],
				           s->o[2 * (cur + k) + 1]);
			cur += (size_t)l;
			continue;
		}
		tk_str_put(t, c, s->o[2 * at], s->o[2 * at + 1]);
		cur += (size_t)l;
	}
	free(buf);
	swap_str(s, t);
	return 0;
}

static int strip(tk_str *s, int left, int right)
{
	size_t a = 0, b = s->n;

	if (left)
		while (a < b && tk_is_whitespace(s->c[a]))
			a++;
	if (right)
		while (b > a && tk_is_whitespace(s->c[b - 1]))
			b--;
	if (a) {
		memmove(s->c, s->c + a, (b - a) * sizeof(*s->c));
		memmove(s->o, s->o + 2 * a, 2 * (b - a) * sizeof(*s->o));
	}
	s->n = b - a;
	return 0;
}

/* every match of P -> CONTENT.  As HF's NormalizedString::replace (a
 * transform that removes the match, then inserts the content): every
 * content character takes the alignment of the last matched one */
static int replace(tk_str *s, tk_str *t, const tk_pattern *p,
                   const uint32_t *content, size_t cn)
{
	tk_spans m = {0};
	size_t i, pos = 0, k;

	if (tk_pattern_find(p, &m, s->c, 0, s->n) < 0) {
		tk_spans_release(&m);
		return -1;
	}
	if (!m.n) {
		tk_spans_release(&m);
		return 0;
	}
	t->n = 0;
	if (tk_str_reserve(t, s->n + m.n * (cn + 1)) < 0) {
		tk_spans_release(&m);
		return -1;
	}
	for (i = 0; i < m.n; i++) {
		size_t a = m.v[i].a, b = m.v[i].b;
		for (; pos < a; pos++)
			tk_str_put(t, s->c[pos], s->o[2 * pos], s->o[2 * pos + 1]);
		for (k = 0; k < cn; k++) {
			/* the last matched character; for an empty match the
			 * one before it (at the start: an empty span where the
			 * text starts, as HF's (0, 0) in the slice) */
			int32_t oa = s->o[0], ob = s->o[0];
			if (b > 0) {
				oa = s->o[2 * (b - 1)];
				ob = s->o[2 * (b - 1) + 1];
			}
			tk_str_put(t, content[k], oa, ob);
		}
		pos = b;
	}
	for (; pos < s->n; pos++)
		tk_str_put(t, s->c[pos], s->o[2 * pos], s->o[2 * pos + 1]);
	tk_spans_release(&m);
	swap_str(s, t);
	return 0;
}

/* Prepend: nothing on an empty string; the prefix aligns to the first
 * character */
static int prepend(tk_str *s, tk_str *t, const uint32_t *p, size_t pn)
{
	size_t i;

	if (!s->n || !pn)
		return 0;
	t->n = 0;
	if (tk_str_reserve(t, s->n + pn) < 0)
		return -1;
	for (i = 0; i < pn; i++)
		tk_str_put(t, p[i], s->o[0], s->o[1]);
	for (i = 0; i < s->n; i++)
		tk_str_put(t, s->c[i], s->o[2 * i], s->o[2 * i + 1]);
	swap_str(s, t);
	return 0;
}

int tk_normalize(const tk_normalizer *n, tk_str *s, tk_str *tmp)
{
	size_t i;

	switch (n->type) {
	case TK_NORM_BERT:
		if (n->u.bert.clean_text && clean_text(s, tmp) < 0)
			return -1;
		if (n->u.bert.chinese && pad_chinese(s, tmp) < 0)
			return -1;
		if (n->u.bert.strip_accents &&
		    (nfd(s, tmp, 0) < 0 ||
		     strip_marks(s, tk_is_nonspacing_mark) < 0))
			return -1;
		if (n->u.bert.lowercase && lowercase(s, tmp) < 0)
			return -1;
		return 0;
	case TK_NORM_LOWERCASE:
		return lowercase(s, tmp);
	case TK_NORM_NFD:
		return nfd(s, tmp, 0);
	case TK_NORM_NFKD:
		return nfd(s, tmp, 1);
	case TK_NORM_NFC:
		return nfd(s, tmp, 0) < 0 ? -1 : compose(s, tmp);
	case TK_NORM_NFKC:
		return nfd(s, tmp, 1) < 0 ? -1 : compose(s, tmp);
	case TK_NORM_STRIP:
		return strip(s, n->u.strip.left, n->u.strip.right);
	case TK_NORM_REPLACE:
		return replace(s, tmp, &n->u.replace.pat, n->u.replace.content,
		               n->u.replace.n);
	case TK_NORM_PREPEND:
		return prepend(s, tmp, n->u.prepend.s, n->u.prepend.n);
	case TK_NORM_PRECOMPILED:
		return tk_charsmap_normalize(&n->u.cmap, s, tmp);
	case TK_NORM_STRIP_ACCENTS:
		return strip_marks(s, tk_is_combining_mark);
	case TK_NORM_SEQUENCE:
		for (i = 0; i < n->u.seq.n; i++)
			if (tk_normalize(&n->u.seq.v[i], s, tmp) < 0)
				return -1;
		return 0;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* JSON helpers shared by the parsers                                   */

/* optional boolean member: *out keeps its default when absent or null */
int tk_opt_bool(int *out, const json_t *j, const char *key,
                    const char *file, const char *field, emb_err *err)
{
	json_t *v = json_object_get(j, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return emb_err_set(err, "%s: field '%s.%s' must be a boolean",
		                   file, field, key);
	*out = json_is_true(v);
	return 0;
}

static const char *type_of(const json_t *j, const char *file,
                           const char *field, const char *what, emb_err *err)
{
	json_t *t;

	if (!json_is_object(j)) {
		emb_err_set(err, "%s: field '%s' must be an object or null",
		            file, field);
		return NULL;
	}
	t = json_object_get(j, "type");
	if (!json_is_string(t)) {
		emb_err_set(err, "%s: field '%s.type' must be a string naming "
		            "the %s", file, field, what);
		return NULL;
	}
	return json_string_value(t);
}

int tk_normalizer_parse(tk_normalizer *out, const json_t *j,
                        const char *file, const char *field, int depth,
                        emb_err *err)
{
	const char *type;

	memset(out, 0, sizeof(*out));
	if (depth > 16)
		return emb_err_set(err, "%s: field '%s' is nested too deeply",
		                   file, field);
	type = type_of(j, file, field, "normalizer", err);
	if (!type)
		return -1;
	if (!strcmp(type, "BertNormalizer")) {
		json_t *sa = json_object_get(j, "strip_accents");
		out->type = TK_NORM_BERT;
		out->u.bert.clean_text = 1;
		out->u.bert.chinese = 1;
		out->u.bert.lowercase = 1;
		if (tk_opt_bool(&out->u.bert.clean_text, j, "clean_text", file,
		             field, err) < 0 ||
		    tk_opt_bool(&out->u.bert.chinese, j, "handle_chinese_chars",
		             file, field, err) < 0 ||
		    tk_opt_bool(&out->u.bert.lowercase, j, "lowercase", file,
		             field, err) < 0)
			return -1;
		/* strip_accents null (or absent): follow lowercase */
		out->u.bert.strip_accents = out->u.bert.lowercase;
		if (sa && !json_is_null(sa)) {
			if (!json_is_boolean(sa))
				return emb_err_set(err, "%s: field "
				                   "'%s.strip_accents' must be a "
				                   "boolean or null", file, field);
			out->u.bert.strip_accents = json_is_true(sa);
		}
		return 0;
	}
	if (!strcmp(type, "Lowercase")) {
		out->type = TK_NORM_LOWERCASE;
		return 0;
	}
	if (!strcmp(type, "NFD")) {
		out->type = TK_NORM_NFD;
		return 0;
	}
	if (!strcmp(type, "StripAccents")) {
		out->type = TK_NORM_STRIP_ACCENTS;
		return 0;
	}
	if (!strcmp(type, "NFC") || !strcmp(type, "NFKC") ||
	    !strcmp(type, "NFKD")) {
		out->type = !strcmp(type, "NFC") ? TK_NORM_NFC :
		            !strcmp(type, "NFKC") ? TK_NORM_NFKC : TK_NORM_NFKD;
		return 0;
	}
	if (!strcmp(type, "Strip")) {
		out->type = TK_NORM_STRIP;
		out->u.strip.left = out->u.strip.right = 1;
		return tk_opt_bool(&out->u.strip.left, j, "strip_left", file, field,
		                err) < 0 ||
		       tk_opt_bool(&out->u.strip.right, j, "strip_right", file,
		                field, err) < 0 ? -1 : 0;
	}
	if (!strcmp(type, "Replace")) {
		json_t *pat = json_object_get(j, "pattern");
		json_t *c = json_object_get(j, "content");
		out->type = TK_NORM_REPLACE;
		if (!json_is_object(pat) || !json_is_string(c))
			return emb_err_set(err, "%s: field '%s' must have a "
			                   "'pattern' object and a 'content' "
			                   "string", file, field);
		if (tk_pattern_parse(&out->u.replace.pat, pat, file, field,
		                     err) < 0)
			return -1;
		out->u.replace.content = tk_utf8_to_cps(json_string_value(c),
		                                        json_string_length(c),
		                                        &out->u.replace.n);
		if (!out->u.replace.content)
			return emb_err_set(err, "out of memory");
		return 0;
	}
	if (!strcmp(type, "Prepend")) {
		json_t *c = json_object_get(j, "prepend");
		out->type = TK_NORM_PREPEND;
		if (!json_is_string(c))
			return emb_err_set(err, "%s: field '%s.prepend' must be a "
			                   "string", file, field);
		out->u.prepend.s = tk_utf8_to_cps(json_string_value(c),
		                                  json_string_length(c),
		                                  &out->u.prepend.n);
		if (!out->u.prepend.s)
			return emb_err_set(err, "out of memory");
		return 0;
	}
	if (!strcmp(type, "Precompiled")) {
		json_t *c = json_object_get(j, "precompiled_charsmap");
		char f[160];
		out->type = TK_NORM_PRECOMPILED;
		if (json_is_null(c))
			return 0;   /* HF: an empty charsmap does nothing */
		if (!json_is_string(c))
			return emb_err_set(err, "%s: field "
			                   "'%s.precompiled_charsmap' must be a "
			                   "base64 string", file, field);
		snprintf(f, sizeof(f), "%s", field);
		return tk_charsmap_parse(&out->u.cmap, json_string_value(c),
		                         json_string_length(c), file, f, err);
	}
	if (!strcmp(type, "Sequence")) {
		json_t *a = json_object_get(j, "normalizers");
		size_t i;
		char sub[128];
		if (!json_is_array(a))
			return emb_err_set(err, "%s: field '%s.normalizers' "
			                   "must be an array", file, field);
		out->type = TK_NORM_SEQUENCE;
		out->u.seq.v = calloc(json_array_size(a) + 1,
		                      sizeof(*out->u.seq.v));
		if (!out->u.seq.v)
			return emb_err_set(err, "out of memory");
		for (i = 0; i < json_array_size(a); i++) {
			snprintf(sub, sizeof(sub), "%s.normalizers[%zu]",
			         field, i);
			out->u.seq.n = i + 1;
			if (tk_normalizer_parse(&out->u.seq.v[i],
			                        json_array_get(a, i), file, sub,
			                        depth + 1, err) < 0)
				return -1;
		}
		return 0;
	}
	return emb_err_set(err, "%s: %s type '%s' is not supported", file,
	                   field, type);
}

void tk_normalizer_release(tk_normalizer *n)
{
	size_t i;

	if (n->type == TK_NORM_SEQUENCE) {
		for (i = 0; i < n->u.seq.n; i++)
			tk_normalizer_release(&n->u.seq.v[i]);
		free(n->u.seq.v);
	} else if (n->type == TK_NORM_REPLACE) {
		tk_pattern_release(&n->u.replace.pat);
		free(n->u.replace.content);
	} else if (n->type == TK_NORM_PREPEND) {
		free(n->u.prepend.s);
	} else if (n->type == TK_NORM_PRECOMPILED) {
		tk_charsmap_release(&n->u.cmap);
	}
	memset(n, 0, sizeof(*n));
}

/* ------------------------------------------------------------------ */
/* pre-tokenizers                                                      */

/* BertPreTokenizer: split on whitespace (removed), then isolate each
 * punctuation character */
static int pre_bert(tk_spans *out, const tk_str *s, const tk_spans *in)
{
	size_t k, i;

	for (k = 0; k < in->n; k++) {
		size_t a = in->v[k].a, b = in->v[k].b, start = a;
		for (i = a; i < b; i++) {
			uint32_t c = s->c[i];
			if (tk_is_whitespace(c)) {
				if (i > start && tk_spans_push(out, start, i) < 0)
					return -1;
				start = i + 1;
			} else if (tk_is_bert_punct(c)) {
				if (i > start && tk_spans_push(out, start, i) < 0)
					return -1;
				if (tk_spans_push(out, i, i + 1) < 0)
					return -1;
				start = i + 1;
			}
		}
		if (b > start && tk_spans_push(out, start, b) < 0)
			return -1;
	}
	return 0;
}

/* WhitespaceSplit: split on whitespace (removed) */
static int pre_ws_split(tk_spans *out, const tk_str *s, const tk_spans *in)
{
	size_t k, i;

	for (k = 0; k < in->n; k++) {
		size_t a = in->v[k].a, b = in->v[k].b, start = a;
		for (i = a; i < b; i++) {
			if (!tk_is_whitespace(s->c[i]))
				continue;
			if (i > start && tk_spans_push(out, start, i) < 0)
				return -1;
			start = i + 1;
		}
		if (b > start && tk_spans_push(out, start, b) < 0)
			return -1;
	}
	return 0;
}

int tk_pretokenize(const tk_pretok *p, tk_spans *out, tk_str *s,
                   const tk_spans *in, tk_spans *tmp, tk_str *stmp)
{
	size_t i;
	tk_spans cur = {0}, t;

	out->n = 0;
	switch (p->type) {
	case TK_PRE_BERT:
		return pre_bert(out, s, in);
	case TK_PRE_WHITESPACE_SPLIT:
		return pre_ws_split(out, s, in);
	case TK_PRE_SEQUENCE:
		/* ping-pong between out and tmp */
		for (i = 0; i < in->n; i++)
			if (tk_spans_push(out, in->v[i].a, in->v[i].b) < 0)
				return -1;
		for (i = 0; i < p->u.seq.n; i++) {
			if (tk_pretokenize(&p->u.seq.v[i], tmp, s, out, &cur,
			                   stmp) < 0) {
				tk_spans_release(&cur);
				return -1;
			}
			t = *out;
			*out = *tmp;
			*tmp = t;
		}
		tk_spans_release(&cur);
		return 0;
	default:
		return tk_pretokenize2(p, out, s, in, stmp);
	}
	return 0;
}

int tk_pretok_parse(tk_pretok *out, const json_t *j, const char *file,
                    const char *field, int depth, emb_err *err)
{
	const char *type;

	memset(out, 0, sizeof(*out));
	if (depth > 16)
		return emb_err_set(err, "%s: field '%s' is nested too deeply",
		                   file, field);
	type = type_of(j, file, field, "pre-tokenizer", err);
	if (!type)
		return -1;
	if (!strcmp(type, "BertPreTokenizer")) {
		out->type = TK_PRE_BERT;
		return 0;
	}
	if (!strcmp(type, "WhitespaceSplit")) {
		out->type = TK_PRE_WHITESPACE_SPLIT;
		return 0;
	}
	if (!strcmp(type, "Sequence")) {
		json_t *a = json_object_get(j, "pretokenizers");
		size_t i;
		char sub[128];
		if (!json_is_array(a))
			return emb_err_set(err, "%s: field '%s.pretokenizers' "
			                   "must be an array", file, field);
		out->type = TK_PRE_SEQUENCE;
		out->u.seq.v = calloc(json_array_size(a) + 1,
		                      sizeof(*out->u.seq.v));
		if (!out->u.seq.v)
			return emb_err_set(err, "out of memory");
		for (i = 0; i < json_array_size(a); i++) {
			snprintf(sub, sizeof(sub), "%s.pretokenizers[%zu]",
			         field, i);
			out->u.seq.n = i + 1;
			if (tk_pretok_parse(&out->u.seq.v[i],
			                    json_array_get(a, i), file, sub,
			                    depth + 1, err) < 0)
				return -1;
		}
		return 0;
	}
	return tk_pretok_parse2(out, type, j, file, field, err);
}

void tk_pretok_release(tk_pretok *p)
{
	size_t i;

	tk_pretok_release2(p);

	if (p->type == TK_PRE_SEQUENCE) {
		for (i = 0; i < p->u.seq.n; i++)
			tk_pretok_release(&p->u.seq.v[i]);
		free(p->u.seq.v);
	}
	memset(p, 0, sizeof(*p));
}
