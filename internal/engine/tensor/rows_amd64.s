//go:build amd64 && !purego

#include "textflag.h"

// Row loops around the one-row AVX2 kernels (rows_amd64.go). Called from
// Go once per row, a kernel goes through Go's ABI wrapper and the loop's
// slice checks each time, about 6% of a decode step whose rows are a few
// hundred bytes; called from here, the same kernel gives the same bits
// for a few stores per row. The kernels keep nothing in registers across
// calls, so the loop's state lives in this frame: 0–63 the kernel's
// arguments and result, 64 the row, 72 the result's place, 80 the rows
// left.
#define ROWS(NAME, ONE) \
TEXT NAME(SB), NOSPLIT, $88-64 \
	MOVQ  nrows+16(FP), AX  \
	TESTQ AX, AX            \
	JE    done              \
	MOVQ  AX, 80(SP)        \
	MOVQ  rows+0(FP), AX    \
	MOVQ  AX, 64(SP)        \
	MOVQ  out+56(FP), AX    \
	MOVQ  AX, 72(SP)        \
loop:                       \
	MOVQ  64(SP), AX        \
	MOVQ  AX, 0(SP)         \
	MOVQ  rb+48(FP), AX     \
	MOVQ  AX, 8(SP)         \
	MOVQ  AX, 16(SP)        \
	MOVQ  act+24(FP), AX    \
	MOVQ  AX, 24(SP)        \
	MOVQ  actLen+32(FP), AX \
	MOVQ  AX, 32(SP)        \
	MOVQ  AX, 40(SP)        \
	MOVQ  n+40(FP), AX      \
	MOVQ  AX, 48(SP)        \
	CALL  ONE(SB)           \
	MOVSS 56(SP), X0        \
	MOVQ  72(SP), AX        \
	MOVSS X0, (AX)          \
	ADDQ  $4, 72(SP)        \
	MOVQ  stride+8(FP), AX  \
	ADDQ  AX, 64(SP)        \
	DECQ  80(SP)            \
	JNZ   loop              \
done:                       \
	RET

// func NAME(rows *byte, stride, nrows int, act *byte, actLen, n, rb int, out *float32)
ROWS(·vecDotQ8_0RowsAVX2, ·vecDotQ8_0AVX2)
ROWS(·vecDotQ4_0RowsAVX2, ·vecDotQ4_0AVX2)
ROWS(·vecDotQ4_KRowsAVX2, ·vecDotQ4_KAVX2)
ROWS(·vecDotQ5_KRowsAVX2, ·vecDotQ5_KAVX2)
ROWS(·vecDotQ6_KRowsAVX2, ·vecDotQ6_KAVX2)
ROWS(·vecDotQ2_KRowsAVX2, ·vecDotQ2_KAVX2)
ROWS(·vecDotQ3_KRowsAVX2, ·vecDotQ3_KAVX2)
ROWS(·vecDotIQ4_NLRowsAVX2, ·vecDotIQ4_NLAVX2)
ROWS(·vecDotIQ4_XSRowsAVX2, ·vecDotIQ4_XSAVX2)
ROWS(·vecDotMXFP4RowsAVX2, ·vecDotMXFP4AVX2)
