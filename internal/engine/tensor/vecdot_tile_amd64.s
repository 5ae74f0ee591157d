//go:build amd64 && !purego

#include "textflag.h"

// Register-tiled Q8_0 dot products: four weight rows against four activation
// rows, 16 results, with each weight and activation block loaded once per
// tile instead of once per dot product.
//
// Each of the 16 results is summed exactly as vecDotQ8_0AVX2 and
// vecDotQ8_0VNNI sum it (vecdot_amd64.s), so the tile and the one-row
// kernels agree bit for bit:
//   - block b gives eight int32 lanes, lane l the exact sum of the products
//     of quants 4l..4l+3;
//   - the lanes become floats and are added into an eight-lane accumulator
//     with one FMA by the block scale, fp16(x.d)·fp16(y.d) rounded once to
//     float32; even blocks go to one accumulator, odd blocks to another;
//   - at the end the two accumulators are added lane by lane and the eight
//     lanes reduced as HSUM8 does.
// Here one zmm register holds both accumulators of a result: its low half
// takes the even blocks and its high half the odd ones, so a block pair is
// one 512-bit step. An odd last block fills only the low half and leaves
// zeros (quants and scales) in the high one, which adds exactly +0.
//
// VPDPBUSD multiplies unsigned by signed bytes. The activations become
// unsigned by flipping their sign bit (a+128, in 1..255) and each lane is
// started from −128·Σw over its four weights, so the lane ends at exactly
// Σa·w, for every weight byte including −128.

DATA q8tilesign<>+0(SB)/4, $0x80808080
GLOBL q8tilesign<>(SB), RODATA|NOPTR, $4

// Word indices that spread the fp16 scales of a block pair (words 0 and 17
// of its bytes) over words 0–7 and 8–15.
DATA q8tilescales<>+0(SB)/8, $0
DATA q8tilescales<>+8(SB)/8, $0
DATA q8tilescales<>+16(SB)/8, $0x0011001100110011
DATA q8tilescales<>+24(SB)/8, $0x0011001100110011
DATA q8tilescales<>+32(SB)/8, $0
DATA q8tilescales<>+40(SB)/8, $0
DATA q8tilescales<>+48(SB)/8, $0
DATA q8tilescales<>+56(SB)/8, $0
GLOBL q8tilescales<>(SB), RODATA|NOPTR, $64

// Q8TCORR sets NC to −128·Σw per lane of the weights in W (Z30 holds 0x80 in
// every byte; Z31 is scratch).
#define Q8TCORR(W, NC) \
	VPXORD   Z31, Z31, Z31 \
	VPDPBUSD W, Z30, Z31   \
	VPXORD   NC, NC, NC    \
	VPSUBD   Z31, NC, NC

// Q8TROW2 loads the quants of the block pair at P into W (block b in the low
// half, b+1 in the high), their correction into NC and the two fp16 scales,
// each in eight lanes, into RS as float32.
// The scales come from one VPERMW of the pair's first 64 bytes with the
// word indices in Z29 (q8tilescales).
#define Q8TROW2(P, YW, W, NC, RS) \
	VMOVDQU64    2(P), YW        \
	VINSERTI64X4 $1, 36(P), W, W \
	Q8TCORR(W, NC)               \
	VPERMW       (P), Z29, Z28   \
	VCVTPH2PS    Y28, RS

// Q8TROW1 is Q8TROW2 for a single block: the high halves are zero.
#define Q8TROW1(P, YW, W, NC, RS) \
	VMOVDQU64    2(P), YW \
	Q8TCORR(W, NC)        \
	VPBROADCASTW (P), X28 \
	VCVTPH2PS    Y28, RS

// Q8TMAC adds one weight row's block pair times the activations in Z28
// (sign-flipped) and Z29 (scales) to ACC.
#define Q8TMAC(W, NC, RS, ACC) \
	VMOVDQA64   NC, Z30        \
	VPDPBUSD    W, Z28, Z30    \
	VCVTDQ2PS   Z30, Z30       \
	VMULPS      RS, Z29, Z31   \
	VFMADD231PS Z31, Z30, ACC

#define Q8TMAC4(A0, A1, A2, A3) \
	Q8TMAC(Z16, Z20, Z24, A0) \
	Q8TMAC(Z17, Z21, Z25, A1) \
	Q8TMAC(Z18, Z22, Z26, A2) \
	Q8TMAC(Z19, Z23, Z27, A3)

// Q8TACT2 multiplies the activation block pair at P with the four rows.
#define Q8TACT2(P, A0, A1, A2, A3) \
	VMOVDQU64    2(P), Y28                  \
	VINSERTI64X4 $1, 36(P), Z28, Z28        \
	VPXORD.BCST  q8tilesign<>(SB), Z28, Z28 \
	VMOVDQU64    q8tilescales<>(SB), Z30    \
	VPERMW       (P), Z30, Z29              \
	VCVTPH2PS    Y29, Z29                   \
	Q8TMAC4(A0, A1, A2, A3)

#define Q8TACT1(P, A0, A1, A2, A3) \
	VMOVDQU64    2(P), Y28                  \
	VPXORD.BCST  q8tilesign<>(SB), Z28, Z28 \
	VPBROADCASTW (P), X29                   \
	VCVTPH2PS    Y29, Z29                   \
	Q8TMAC4(A0, A1, A2, A3)

// Q8TSUM reduces the accumulator pair in Z to one float in lane 0 of X: the
// high half added to the low, then HSUM8's steps on Z30 as scratch.
#define Q8TSUM(Z, Y, X) \
	VEXTRACTF64X4 $1, Z, Y30   \
	VADDPS        Y30, Y, Y    \
	VEXTRACTF32X4 $1, Y, X30   \
	VADDPS        X30, X, X    \
	VPERMILPS     $0x4e, X, X30 \
	VADDPS        X30, X, X    \
	VPERMILPS     $0xb1, X, X30 \
	VADDPS        X30, X, X

// Q8TSTORE reduces the 16 accumulators and stores them to out (the
// frame's out and outStride), then returns.
#define Q8TSTORE \
	Q8TSUM(Z0, Y0, X0) \
	Q8TSUM(Z1, Y1, X1) \
	Q8TSUM(Z2, Y2, X2) \
	Q8TSUM(Z3, Y3, X3) \
	Q8TSUM(Z4, Y4, X4) \
	Q8TSUM(Z5, Y5, X5) \
	Q8TSUM(Z6, Y6, X6) \
	Q8TSUM(Z7, Y7, X7) \
	Q8TSUM(Z8, Y8, X8) \
	Q8TSUM(Z9, Y9, X9) \
	Q8TSUM(Z10, Y10, X10) \
	Q8TSUM(Z11, Y11, X11) \
	Q8TSUM(Z12, Y12, X12) \
	Q8TSUM(Z13, Y13, X13) \
	Q8TSUM(Z14, Y14, X14) \
	Q8TSUM(Z15, Y15, X15) \
	MOVQ  out+40(FP), R14 \
	MOVQ  outStride+48(FP), DX \
	SHLQ  $2, DX \
	LEAQ  (R14)(DX*2), AX \
	ADDQ  DX, AX \
	VMOVSS X0, 0(R14) \
	VMOVSS X1, 4(R14) \
	VMOVSS X2, 8(R14) \
	VMOVSS X3, 12(R14) \
	VMOVSS X4, 0(R14)(DX*1) \
	VMOVSS X5, 4(R14)(DX*1) \
	VMOVSS X6, 8(R14)(DX*1) \
	VMOVSS X7, 12(R14)(DX*1) \
	VMOVSS X8, 0(R14)(DX*2) \
	VMOVSS X9, 4(R14)(DX*2) \
	VMOVSS X10, 8(R14)(DX*2) \
	VMOVSS X11, 12(R14)(DX*2) \
	VMOVSS X12, 0(AX) \
	VMOVSS X13, 4(AX) \
	VMOVSS X14, 8(AX) \
	VMOVSS X15, 12(AX) \
	VZEROUPPER \
	RET

// func vecDotQ8_0Tile4VNNI(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)
//
// out[a·outStride+r] = the dot product of row r (at rows+r·rowStride) with
// activation row a (at acts+a·actStride), over nb blocks, for r, a < 4.
// Accumulator of (r, a) is Z(4a+r).
TEXT ·vecDotQ8_0Tile4VNNI(SB), NOSPLIT, $0-56
	MOVQ rows+0(FP), SI
	MOVQ rowStride+8(FP), BX
	MOVQ acts+16(FP), DI
	MOVQ actStride+24(FP), DX
	MOVQ nb+32(FP), CX
	LEAQ (SI)(BX*1), R8
	LEAQ (SI)(BX*2), R9
	LEAQ (R8)(BX*2), R10
	LEAQ (DI)(DX*1), R11
	LEAQ (DI)(DX*2), R12
	LEAQ (R11)(DX*2), R13

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

	MOVQ CX, AX
	SHRQ $1, AX
	JE   q8tone

q8tpair:
	VPBROADCASTD q8tilesign<>(SB), Z30
	VMOVDQU64    q8tilescales<>(SB), Z29
	Q8TROW2(SI, Y16, Z16, Z20, Z24)
	Q8TROW2(R8, Y17, Z17, Z21, Z25)
	Q8TROW2(R9, Y18, Z18, Z22, Z26)
	Q8TROW2(R10, Y19, Z19, Z23, Z27)
	Q8TACT2(DI, Z0, Z1, Z2, Z3)
	Q8TACT2(R11, Z4, Z5, Z6, Z7)
	Q8TACT2(R12, Z8, Z9, Z10, Z11)
	Q8TACT2(R13, Z12, Z13, Z14, Z15)
	ADDQ $68, SI
	ADDQ $68, R8
	ADDQ $68, R9
	ADDQ $68, R10
	ADDQ $68, DI
	ADDQ $68, R11
	ADDQ $68, R12
	ADDQ $68, R13
	DECQ AX
	JNZ  q8tpair

q8tone:
	TESTQ $1, CX
	JE    q8tdone
	VPBROADCASTD q8tilesign<>(SB), Z30
	Q8TROW1(SI, Y16, Z16, Z20, Z24)
	Q8TROW1(R8, Y17, Z17, Z21, Z25)
	Q8TROW1(R9, Y18, Z18, Z22, Z26)
	Q8TROW1(R10, Y19, Z19, Z23, Z27)
	Q8TACT1(DI, Z0, Z1, Z2, Z3)
	Q8TACT1(R11, Z4, Z5, Z6, Z7)
	Q8TACT1(R12, Z8, Z9, Z10, Z11)
	Q8TACT1(R13, Z12, Z13, Z14, Z15)

q8tdone:
	Q8TSTORE

// The Q4_0 tile follows vecDotQ4_0VNNI's sums the same way: block b's lane
// l is Σq·y − Σ8·y over its four elements (low nibbles are elements 0–15,
// high nibbles 16–31), one FMA per block by fp16(x.d)·fp16(y.d) into the
// even or odd accumulator. The nibbles are already unsigned, so the
// activations stay signed and each lane starts from −Σ8·y, computed once
// per activation block pair.

// Word shift counts: 0 for the low 128 bits of each block, 4 for the high.
DATA q40tileshift<>+0(SB)/8, $0
DATA q40tileshift<>+8(SB)/8, $0
DATA q40tileshift<>+16(SB)/8, $0x0004000400040004
DATA q40tileshift<>+24(SB)/8, $0x0004000400040004
DATA q40tileshift<>+32(SB)/8, $0
DATA q40tileshift<>+40(SB)/8, $0
DATA q40tileshift<>+48(SB)/8, $0x0004000400040004
DATA q40tileshift<>+56(SB)/8, $0x0004000400040004
GLOBL q40tileshift<>(SB), RODATA|NOPTR, $64

DATA q40tilenib<>+0(SB)/4, $0x0f0f0f0f
GLOBL q40tilenib<>(SB), RODATA|NOPTR, $4

DATA q40tileeights<>+0(SB)/4, $0x08080808
GLOBL q40tileeights<>(SB), RODATA|NOPTR, $4

// Q40TROW2 unpacks the nibbles of the Q4_0 block pair at P into W (block b
// low then high nibbles, then block b+1) and its two scales into RS.
#define Q40TROW2(P, YW, W, RS) \
	VBROADCASTI32X4 2(P), YW              \
	VBROADCASTI32X4 20(P), Y28            \
	VINSERTI64X4    $1, Y28, W, W         \
	VPSRLVW         Z21, W, W             \
	VPANDD.BCST     q40tilenib<>(SB), W, W \
	VPBROADCASTW    (P), X28              \
	VPBROADCASTW    18(P), X29            \
	VINSERTI32X4    $1, X29, Y28, Y28     \
	VCVTPH2PS       Y28, RS

#define Q40TROW1(P, YW, W, RS) \
	VBROADCASTI32X4 2(P), YW              \
	VPSRLVW         Z21, W, W             \
	VPANDD.BCST     q40tilenib<>(SB), W, W \
	VPBROADCASTW    (P), X28              \
	VCVTPH2PS       Y28, RS

// Q40TMAC adds one weight row's block pair times the activations in Z28
// (signed; lanes start from Z20) and Z29 (scales) to ACC.
#define Q40TMAC(W, RS, ACC) \
	VMOVDQA64   Z20, Z30     \
	VPDPBUSD    Z28, W, Z30  \
	VCVTDQ2PS   Z30, Z30     \
	VMULPS      RS, Z29, Z31 \
	VFMADD231PS Z31, Z30, ACC

#define Q40TMAC4(A0, A1, A2, A3) \
	Q40TMAC(Z16, Z24, A0) \
	Q40TMAC(Z17, Z25, A1) \
	Q40TMAC(Z18, Z26, A2) \
	Q40TMAC(Z19, Z27, A3)

// Q40TCORR sets Z20 to −Σ8·y per lane of the activations in Z28.
#define Q40TCORR \
	VPXORD   Z31, Z31, Z31 \
	VPDPBUSD Z28, Z23, Z31 \
	VPXORD   Z20, Z20, Z20 \
	VPSUBD   Z31, Z20, Z20

#define Q40TACT2(P, A0, A1, A2, A3) \
	VMOVDQU64    2(P), Y28           \
	VINSERTI64X4 $1, 36(P), Z28, Z28 \
	Q40TCORR                         \
	VPERMW       (P), Z22, Z29       \
	VCVTPH2PS    Y29, Z29            \
	Q40TMAC4(A0, A1, A2, A3)

#define Q40TACT1(P, A0, A1, A2, A3) \
	VMOVDQU64    2(P), Y28 \
	Q40TCORR               \
	VPBROADCASTW (P), X29  \
	VCVTPH2PS    Y29, Z29  \
	Q40TMAC4(A0, A1, A2, A3)

// func vecDotQ4_0Tile4VNNI(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)
//
// vecDotQ8_0Tile4VNNI for Q4_0 weights: out[a·outStride+r] =
// vecDotQ4_0VNNI(row r, act a, 32·nb) for r, a < 4.
TEXT ·vecDotQ4_0Tile4VNNI(SB), NOSPLIT, $0-56
	MOVQ rows+0(FP), SI
	MOVQ rowStride+8(FP), BX
	MOVQ acts+16(FP), DI
	MOVQ actStride+24(FP), DX
	MOVQ nb+32(FP), CX
	LEAQ (SI)(BX*1), R8
	LEAQ (SI)(BX*2), R9
	LEAQ (R8)(BX*2), R10
	LEAQ (DI)(DX*1), R11
	LEAQ (DI)(DX*2), R12
	LEAQ (R11)(DX*2), R13

	VMOVDQU64    q40tileshift<>(SB), Z21
	VMOVDQU64    q8tilescales<>(SB), Z22
	VPBROADCASTD q40tileeights<>(SB), Z23

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

	MOVQ CX, AX
	SHRQ $1, AX
	JE   q40tone

q40tpair:
	Q40TROW2(SI, Y16, Z16, Z24)
	Q40TROW2(R8, Y17, Z17, Z25)
	Q40TROW2(R9, Y18, Z18, Z26)
	Q40TROW2(R10, Y19, Z19, Z27)
	Q40TACT2(DI, Z0, Z1, Z2, Z3)
	Q40TACT2(R11, Z4, Z5, Z6, Z7)
	Q40TACT2(R12, Z8, Z9, Z10, Z11)
	Q40TACT2(R13, Z12, Z13, Z14, Z15)
	ADDQ $36, SI
	ADDQ $36, R8
	ADDQ $36, R9
	ADDQ $36, R10
	ADDQ $68, DI
	ADDQ $68, R11
	ADDQ $68, R12
	ADDQ $68, R13
	DECQ AX
	JNZ  q40tpair

q40tone:
	TESTQ $1, CX
	JE    q40tdone
	Q40TROW1(SI, Y16, Z16, Z24)
	Q40TROW1(R8, Y17, Z17, Z25)
	Q40TROW1(R9, Y18, Z18, Z26)
	Q40TROW1(R10, Y19, Z19, Z27)
	Q40TACT1(DI, Z0, Z1, Z2, Z3)
	Q40TACT1(R11, Z4, Z5, Z6, Z7)
	Q40TACT1(R12, Z8, Z9, Z10, Z11)
	Q40TACT1(R13, Z12, Z13, Z14, Z15)

q40tdone:
	Q8TSTORE
