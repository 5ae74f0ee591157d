//go:build amd64 && !purego

#include "textflag.h"
#include "rownext_amd64.h"

// KVONE and KVROWS are the bodies of the one-pair and rows K-quant VNNI
// kernels (vecDotQ4_KVNNI and vecDotQ4_KRowsVNNI below, and their Q5_K
// twins): NIB unpacks a group (Q4KTNIB or Q5KTNIB), BB is the weight
// block's size in bytes. Defined before the first TEXT for go vet's frame
// checks (see KTILE).
#define KVONE(NIB, BB) \
	MOVQ row_base+0(FP), SI \
	MOVQ act_base+24(FP), DI \
	MOVQ n+48(FP), CX \
	SHRQ $8, CX \
	VPXORD Z0, Z0, Z0 \
	TESTQ CX, CX \
	JE    q4kvdone \
	Q4KVCONST \
q4kvloop: KVBLOCK(NIB) \
	ADDQ $BB, SI \
	ADDQ $292, DI \
	DECQ CX \
	JNZ  q4kvloop \
q4kvdone: Q4KVREDUCE \
	VMOVSS X0, ret+56(FP) \
	VZEROUPPER \
	RET

#define KVROWS(NIB, BB) \
	MOVQ  rows+0(FP), BX \
	MOVQ  nrows+16(FP), DX \
	MOVQ  act+24(FP), R10 \
	TESTQ DX, DX \
	JE    q4krdone \
	Q4KVCONST \
q4krrow: MOVQ   BX, SI \
	MOVQ   R10, DI \
	MOVQ   n+32(FP), CX \
	SHRQ   $8, CX \
	VPXORD Z0, Z0, Z0 \
	TESTQ  CX, CX \
	JE     q4krout \
q4krloop: PREFETCHT0 4096(SI) \
	PREFETCHT0 4160(SI) \
	PREFETCHT0 4224(SI) \
	KVBLOCK(NIB) \
	ADDQ $BB, SI \
	ADDQ $292, DI \
	DECQ CX \
	JNZ  q4krloop \
q4krout: Q4KVREDUCE \
	ROWNEXT(BX, DX, q4krrow) \
q4krdone: VZEROUPPER \
	RET

// KTILE is the body of the Q4_K and Q5_K tiles (vecDotQ4_KTileVNNI below):
// ROW unpacks a row's block (Q4KTROW or Q5KTROW), BB is the weight block's
// size in bytes. It is defined before the first TEXT so that go vet's
// frame checks, which do not expand macros, do not read it as part of
// another function.
#define KTILE(ROW, BB) \
	MOVQ rows+0(FP), SI \
	MOVQ rowStride+8(FP), BX \
	MOVQ acts+16(FP), DI \
	MOVQ actStride+24(FP), DX \
	MOVQ nb+32(FP), CX \
	VMOVDQU64    q4ktshift<>(SB), Z14 \
	VPBROADCASTD q40tilenib<>(SB), Z13 \
	VPXORD       Z0, Z0, Z0 \
	LEAQ         1344(SP), R12 \
	MOVQ         nq+56(FP), R11 \
	SHLQ         $2, R11 \
q4ktzero: VMOVDQU64 Z0, 0(R12) \
	VMOVDQU64 Z0, 64(R12) \
	VMOVDQU64 Z0, 128(R12) \
	ADDQ      $192, R12 \
	DECQ      R11 \
	JNZ       q4ktzero \
q4ktloop: VMOVDQU64 q4ktperm<>(SB), Z15 \
	MOVQ      SI, R9 \
	Q4KTPREP(0) \
	ADDQ      BX, R9 \
	Q4KTPREP(1) \
	ADDQ      BX, R9 \
	Q4KTPREP(2) \
	ADDQ      BX, R9 \
	Q4KTPREP(3) \
	VMOVDQU64 Q4KT_MINS(SP), Z15 \
	VMOVUPS   Q4KT_FMIN(SP), Z9 \
	VMOVUPS   Q4KT_FS01(SP), Z8 \
	MOVQ      SI, R9 \
	ROW(0, Z16, Z17, Z18, Z19, Z24, Z25, Z26, Z27) \
	ADDQ      BX, R9 \
	ROW(1, Z20, Z21, Z22, Z23, Z28, Z29, Z30, Z31) \
	MOVQ      DI, R10 \
	LEAQ      1344(SP), R12 \
	MOVQ      nq+56(FP), R11 \
q4ktquad01: Q4KTLOAD \
	Q4KTMINS(128) \
	Q4KTPAIR(0) \
	ADDQ DX, R10 \
	Q4KTLOAD \
	Q4KTMINS(320) \
	Q4KTPAIR(192) \
	ADDQ DX, R10 \
	Q4KTLOAD \
	Q4KTMINS(512) \
	Q4KTPAIR(384) \
	ADDQ DX, R10 \
	Q4KTLOAD \
	Q4KTMINS(704) \
	Q4KTPAIR(576) \
	ADDQ DX, R10 \
	ADDQ $768, R12 \
	DECQ R11 \
	JNZ  q4ktquad01 \
	VMOVUPS Q4KT_FS23(SP), Z8 \
	ADDQ    BX, R9 \
	ROW(2, Z16, Z17, Z18, Z19, Z24, Z25, Z26, Z27) \
	ADDQ    BX, R9 \
	ROW(3, Z20, Z21, Z22, Z23, Z28, Z29, Z30, Z31) \
	MOVQ    DI, R10 \
	LEAQ    1344(SP), R12 \
	MOVQ    nq+56(FP), R11 \
q4ktquad23: Q4KTLOAD \
	Q4KTPAIR(64) \
	ADDQ DX, R10 \
	Q4KTLOAD \
	Q4KTPAIR(256) \
	ADDQ DX, R10 \
	Q4KTLOAD \
	Q4KTPAIR(448) \
	ADDQ DX, R10 \
	Q4KTLOAD \
	Q4KTPAIR(640) \
	ADDQ DX, R10 \
	ADDQ $768, R12 \
	DECQ R11 \
	JNZ  q4ktquad23 \
	ADDQ $BB, SI \
	ADDQ $292, DI \
	DECQ CX \
	JNZ  q4ktloop \
	MOVQ out+40(FP), R14 \
	MOVQ outStride+48(FP), DX \
	SHLQ $2, DX \
	LEAQ 1344(SP), R12 \
	MOVQ nq+56(FP), R11 \
	SHLQ $2, R11 \
q4ktout: Q4KTOUT4 \
	ADDQ DX, R14 \
	ADDQ $192, R12 \
	DECQ R11 \
	JNZ  q4ktout \
	VZEROUPPER \
	RET

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

// The Q4_K tile follows vecDotQ4_KAVX2 (vecdot_amd64.s) per pair. In block
// b, lane l of its eight int32 lanes is the exact sum over the eight
// 32-element sub-blocks j of sc_j·Σ q·y over elements 4l..4l+3 of j; the
// lanes become floats and go into an eight-lane accumulator with one FMA by
// fp16(d)·y.d rounded once to float32. Beside it a four-lane accumulator
// takes, with one FMA by fp16(dmin)·y.d, lane i = m_2i·s_2i + m_2i+1·s_2i+1,
// s_j the activations' sum over sub-block j. At the end the eight lanes are
// reduced as HSUM8 does, the four likewise, and the second subtracted from
// the first.
//
// Here the eight-lane accumulators of rows 0 and 1 (and of rows 2 and 3)
// against one activation share one zmm in memory, and the four-lane ones of
// all four rows another, so one conversion, multiply and FMA serve two sums
// or four mins. The rows go in two passes of two: a row's group g (64
// quants: 32 low nibbles for sub-block 2g, then 32 high nibbles for 2g+1)
// unpacks into one zmm and its scales into another, all sixteen in Z16–Z31
// for the pass, and each activation block is loaded into four registers
// once per pass. The scales of a group spread over words (sc_2g in the low
// half, sc_2g+1 in the high) so that VPDPWSSD multiplies them into
// VPMADDUBSW's pair sums (at most 2·15·128, no saturation); the high halves
// of two rows' results are then added to their low halves, lane by lane,
// which gives the one-row kernel's eight lanes exactly. In the first pass
// the activation's eight sub-block sums, repeated in each 128-bit lane, meet
// the four rows' mins in one VPMADDWD.
//
// A call covers 4·nq activations (nq ≤ 4), so each block of the four rows
// is unpacked once for up to 16 activations.
//
// Frame: the eight scale bytes of row r at 8r; float scales
// [d0 ×8, d1 ×8] at 1024, [d2 ×8, d3 ×8] at 1088 and
// [dmin0 ×4, dmin1 ×4, dmin2 ×4, dmin3 ×4] at 1152; the eight mins of row r
// as words at 1280+16r; and from 1344 per activation a the accumulators of
// rows 0–1 at 192a, of rows 2–3 at 192a+64 and the mins at 192a+128.

// Frame offsets of the Q4_K tile.
#define Q4KT_FS01 1024
#define Q4KT_FS23 1088
#define Q4KT_FMIN 1152
#define Q4KT_MINS 1280

// VPSHUFB indices that widen scale bytes 2g and 2g+1 of a broadcast qword
// into the low and high 16 words.
DATA q4ktsc<>+0(SB)/8, $0x8000800080008000
DATA q4ktsc<>+8(SB)/8, $0x8000800080008000
DATA q4ktsc<>+16(SB)/8, $0x8000800080008000
DATA q4ktsc<>+24(SB)/8, $0x8000800080008000
DATA q4ktsc<>+32(SB)/8, $0x8001800180018001
DATA q4ktsc<>+40(SB)/8, $0x8001800180018001
DATA q4ktsc<>+48(SB)/8, $0x8001800180018001
DATA q4ktsc<>+56(SB)/8, $0x8001800180018001
DATA q4ktsc<>+64(SB)/8, $0x8002800280028002
DATA q4ktsc<>+72(SB)/8, $0x8002800280028002
DATA q4ktsc<>+80(SB)/8, $0x8002800280028002
DATA q4ktsc<>+88(SB)/8, $0x8002800280028002
DATA q4ktsc<>+96(SB)/8, $0x8003800380038003
DATA q4ktsc<>+104(SB)/8, $0x8003800380038003
DATA q4ktsc<>+112(SB)/8, $0x8003800380038003
DATA q4ktsc<>+120(SB)/8, $0x8003800380038003
DATA q4ktsc<>+128(SB)/8, $0x8004800480048004
DATA q4ktsc<>+136(SB)/8, $0x8004800480048004
DATA q4ktsc<>+144(SB)/8, $0x8004800480048004
DATA q4ktsc<>+152(SB)/8, $0x8004800480048004
DATA q4ktsc<>+160(SB)/8, $0x8005800580058005
DATA q4ktsc<>+168(SB)/8, $0x8005800580058005
DATA q4ktsc<>+176(SB)/8, $0x8005800580058005
DATA q4ktsc<>+184(SB)/8, $0x8005800580058005
DATA q4ktsc<>+192(SB)/8, $0x8006800680068006
DATA q4ktsc<>+200(SB)/8, $0x8006800680068006
DATA q4ktsc<>+208(SB)/8, $0x8006800680068006
DATA q4ktsc<>+216(SB)/8, $0x8006800680068006
DATA q4ktsc<>+224(SB)/8, $0x8007800780078007
DATA q4ktsc<>+232(SB)/8, $0x8007800780078007
DATA q4ktsc<>+240(SB)/8, $0x8007800780078007
DATA q4ktsc<>+248(SB)/8, $0x8007800780078007
GLOBL q4ktsc<>(SB), RODATA|NOPTR, $256

// Word shift counts: 0 for the low 16 words (low nibbles), 4 for the high.
DATA q4ktshift<>+0(SB)/8, $0
DATA q4ktshift<>+8(SB)/8, $0
DATA q4ktshift<>+16(SB)/8, $0
DATA q4ktshift<>+24(SB)/8, $0
DATA q4ktshift<>+32(SB)/8, $0x0004000400040004
DATA q4ktshift<>+40(SB)/8, $0x0004000400040004
DATA q4ktshift<>+48(SB)/8, $0x0004000400040004
DATA q4ktshift<>+56(SB)/8, $0x0004000400040004
GLOBL q4ktshift<>(SB), RODATA|NOPTR, $64

// Dword indices that spread [d, dmin, 0, 0] into [d ×8, dmin ×4, 0 ×4].
DATA q4ktperm<>+0(SB)/8, $0
DATA q4ktperm<>+8(SB)/8, $0
DATA q4ktperm<>+16(SB)/8, $0
DATA q4ktperm<>+24(SB)/8, $0
DATA q4ktperm<>+32(SB)/8, $0x0000000100000001
DATA q4ktperm<>+40(SB)/8, $0x0000000100000001
DATA q4ktperm<>+48(SB)/8, $0x0000000200000002
DATA q4ktperm<>+56(SB)/8, $0x0000000200000002
GLOBL q4ktperm<>(SB), RODATA|NOPTR, $64

// Word shift counts bringing bit 2g (low half) and 2g+1 (high half) of
// each qh byte to bit 0, for the Q5_K tile's group g.
DATA q5ktqh<>+0(SB)/8, $0x0000000000000000
DATA q5ktqh<>+8(SB)/8, $0x0000000000000000
DATA q5ktqh<>+16(SB)/8, $0x0000000000000000
DATA q5ktqh<>+24(SB)/8, $0x0000000000000000
DATA q5ktqh<>+32(SB)/8, $0x0001000100010001
DATA q5ktqh<>+40(SB)/8, $0x0001000100010001
DATA q5ktqh<>+48(SB)/8, $0x0001000100010001
DATA q5ktqh<>+56(SB)/8, $0x0001000100010001
DATA q5ktqh<>+64(SB)/8, $0x0002000200020002
DATA q5ktqh<>+72(SB)/8, $0x0002000200020002
DATA q5ktqh<>+80(SB)/8, $0x0002000200020002
DATA q5ktqh<>+88(SB)/8, $0x0002000200020002
DATA q5ktqh<>+96(SB)/8, $0x0003000300030003
DATA q5ktqh<>+104(SB)/8, $0x0003000300030003
DATA q5ktqh<>+112(SB)/8, $0x0003000300030003
DATA q5ktqh<>+120(SB)/8, $0x0003000300030003
DATA q5ktqh<>+128(SB)/8, $0x0004000400040004
DATA q5ktqh<>+136(SB)/8, $0x0004000400040004
DATA q5ktqh<>+144(SB)/8, $0x0004000400040004
DATA q5ktqh<>+152(SB)/8, $0x0004000400040004
DATA q5ktqh<>+160(SB)/8, $0x0005000500050005
DATA q5ktqh<>+168(SB)/8, $0x0005000500050005
DATA q5ktqh<>+176(SB)/8, $0x0005000500050005
DATA q5ktqh<>+184(SB)/8, $0x0005000500050005
DATA q5ktqh<>+192(SB)/8, $0x0006000600060006
DATA q5ktqh<>+200(SB)/8, $0x0006000600060006
DATA q5ktqh<>+208(SB)/8, $0x0006000600060006
DATA q5ktqh<>+216(SB)/8, $0x0006000600060006
DATA q5ktqh<>+224(SB)/8, $0x0007000700070007
DATA q5ktqh<>+232(SB)/8, $0x0007000700070007
DATA q5ktqh<>+240(SB)/8, $0x0007000700070007
DATA q5ktqh<>+248(SB)/8, $0x0007000700070007
GLOBL q5ktqh<>(SB), RODATA|NOPTR, $256

DATA q5ktbit4<>+0(SB)/4, $0x10101010
GLOBL q5ktbit4<>(SB), RODATA|NOPTR, $4

// Q4KTSCALES unpacks the six-bit scales and mins of the block at R9 as
// KSCALES does: the eight scale bytes into AX, the eight mins into R8.
#define Q4KTSCALES \
	MOVL 4(R9), AX          \
	MOVL 8(R9), R8          \
	MOVL 12(R9), R11        \
	MOVL AX, R12            \
	SHRL $6, R12            \
	ANDL $0x03030303, R12   \
	SHLL $4, R12            \
	MOVL R11, R13           \
	ANDL $0x0f0f0f0f, R13   \
	ORL  R13, R12           \
	MOVL R8, R14            \
	SHRL $6, R14            \
	ANDL $0x03030303, R14   \
	SHLL $4, R14            \
	SHRL $4, R11            \
	ANDL $0x0f0f0f0f, R11   \
	ORL  R11, R14           \
	ANDL $0x3f3f3f3f, AX    \
	ANDL $0x3f3f3f3f, R8    \
	SHLQ $32, R12           \
	ORQ  R12, AX            \
	SHLQ $32, R14           \
	ORQ  R14, R8

// Q4KTNIB unpacks group g of the block at R9 into W: low nibbles in the
// low half, high nibbles in the high half.
#define Q4KTNIB(g, W) \
	VBROADCASTI64X4 (16+32*g)(R9), W \
	VPSRLVW         Z14, W, W        \
	VPANDD          Z13, W, W

// Q4KTPREP stores the scales and mins of row r's block at R9 in the frame.
#define Q4KTPREP(r) \
	Q4KTSCALES                                \
	MOVQ          AX, (8*r)(SP)               \
	VMOVQ         R8, X1                      \
	VPMOVZXBW     X1, X1                      \
	VMOVDQU       X1, (1280+16*r)(SP)         \
	MOVL          (R9), AX                    \
	VMOVD         AX, X2                      \
	VCVTPH2PS     X2, X2                      \
	VPERMPS       Z2, Z15, Z2                 \
	VMOVUPS       Y2, (1024+32*r)(SP)         \
	VEXTRACTF32X4 $2, Z2, (1152+16*r)(SP)

// Q4KTROW unpacks row r's block at R9: its quants into W0–W3, its scale
// words into S0–S3.
#define Q4KTROW(r, W0, W1, W2, W3, S0, S1, S2, S3) \
	VPBROADCASTQ (8*r)(SP), S0               \
	VPSHUFB      q4ktsc<>+64(SB), S0, S1      \
	VPSHUFB      q4ktsc<>+128(SB), S0, S2     \
	VPSHUFB      q4ktsc<>+192(SB), S0, S3     \
	VPSHUFB      q4ktsc<>+0(SB), S0, S0       \
	Q4KTNIB(0, W0)                            \
	Q4KTNIB(1, W1)                            \
	Q4KTNIB(2, W2)                            \
	Q4KTNIB(3, W3)

// Q5KTNIB is Q4KTNIB for Q5_K (quants at 48, qh at 16): the nibbles plus
// bit 2g (low half) and 2g+1 (high half) of each qh byte moved to bit 4:
// shifting whole words right moves each byte's bit to bit 0 and the left
// shift by 4 to bit 4; what crosses from the neighbouring byte never
// reaches bit 4 and the mask drops it. Z1 is scratch.
#define Q5KTNIB(g, W) \
	VBROADCASTI64X4 (48+32*g)(R9), W      \
	VPSRLVW         Z14, W, W             \
	VPANDD          Z13, W, W             \
	VBROADCASTI64X4 16(R9), Z1            \
	VPSRLVW         q5ktqh<>+(64*g)(SB), Z1, Z1 \
	VPSLLW          $4, Z1, Z1            \
	VPANDD.BCST     q5ktbit4<>(SB), Z1, Z1 \
	VPORD           Z1, W, W

// Q5KTROW is Q4KTROW for Q5_K.
#define Q5KTROW(r, W0, W1, W2, W3, S0, S1, S2, S3) \
	VPBROADCASTQ (8*r)(SP), S0               \
	VPSHUFB      q4ktsc<>+64(SB), S0, S1      \
	VPSHUFB      q4ktsc<>+128(SB), S0, S2     \
	VPSHUFB      q4ktsc<>+192(SB), S0, S3     \
	VPSHUFB      q4ktsc<>+0(SB), S0, S0       \
	Q5KTNIB(0, W0)                            \
	Q5KTNIB(1, W1)                            \
	Q5KTNIB(2, W2)                            \
	Q5KTNIB(3, W3)

// Q4KTSUM sets Z to a row's sixteen lanes of its block (quants W0–W3,
// scale words S0–S3) times the activation block's quants in Z2, Z10, Z11
// and Z12: sub-block 2g's share in the low half, 2g+1's in the high.
#define Q4KTSUM(Z, W0, W1, W2, W3, S0, S1, S2, S3) \
	VPMADDUBSW Z2, W0, Z3   \
	VPMADDWD   S0, Z3, Z    \
	VPMADDUBSW Z10, W1, Z3  \
	VPDPWSSD   S1, Z3, Z    \
	VPMADDUBSW Z11, W2, Z3  \
	VPDPWSSD   S2, Z3, Z    \
	VPMADDUBSW Z12, W3, Z3  \
	VPDPWSSD   S3, Z3, Z

// Q4KTLOAD loads the activation block at R10: y.d broadcast into Z0, the
// quants into Z2, Z10, Z11 and Z12.
#define Q4KTLOAD \
	VBROADCASTSS (R10), Z0      \
	VMOVDQU64    4(R10), Z2     \
	VMOVDQU64    68(R10), Z10   \
	VMOVDQU64    132(R10), Z11  \
	VMOVDQU64    196(R10), Z12

// Q4KTPAIR adds the pass's two rows (quants Z16–Z19 and Z20–Z23, scale
// words Z24–Z27 and Z28–Z31, float scales in Z8) times the loaded
// activation block to the accumulator at acc(R12).
#define Q4KTPAIR(acc) \
	Q4KTSUM(Z6, Z16, Z17, Z18, Z19, Z24, Z25, Z26, Z27) \
	Q4KTSUM(Z7, Z20, Z21, Z22, Z23, Z28, Z29, Z30, Z31) \
	VSHUFI64X2  $0x44, Z7, Z6, Z3                       \
	VSHUFI64X2  $0xee, Z7, Z6, Z6                       \
	VPADDD      Z6, Z3, Z3                              \
	VCVTDQ2PS   Z3, Z3                                  \
	VMULPS      Z8, Z0, Z5                              \
	VFMADD213PS acc(R12), Z5, Z3                        \
	VMOVUPS     Z3, acc(R12)

// Q4KTMINS adds the four rows' mins (words in Z15, float scales in Z9)
// times the sub-block sums of the activation block at R10 (y.d in Z0) to
// the accumulator at acc(R12).
#define Q4KTMINS(acc) \
	VMOVDQU     260(R10), X1      \
	VPHADDW     276(R10), X1, X1  \
	VSHUFI32X4  $0, Z1, Z1, Z1    \
	VPMADDWD    Z15, Z1, Z4       \
	VCVTDQ2PS   Z4, Z4            \
	VMULPS      Z9, Z0, Z5        \
	VFMADD213PS acc(R12), Z5, Z4  \
	VMOVUPS     Z4, acc(R12)

// Q4KTOUT reduces row r's accumulators of the activation at R12 (its eight
// lanes at sum(R12), its four mins at (128+16r)(R12)) and stores the result
// to off(R14).
#define Q4KTOUT(sum, r, off) \
	VMOVUPS       sum(R12), Y2        \
	VMOVUPS       (128+16*r)(R12), X3 \
	VEXTRACTF128  $1, Y2, X4          \
	VADDPS        X4, X2, X2          \
	VPERMILPS     $0x4e, X2, X4       \
	VADDPS        X4, X2, X2          \
	VPERMILPS     $0xb1, X2, X4       \
	VADDPS        X4, X2, X2          \
	VPERMILPS     $0x4e, X3, X4       \
	VADDPS        X4, X3, X3          \
	VPERMILPS     $0xb1, X3, X4       \
	VADDPS        X4, X3, X3          \
	VSUBSS        X3, X2, X2          \
	VMOVSS        X2, off(R14)

#define Q4KTOUT4 \
	Q4KTOUT(0, 0, 0)    \
	Q4KTOUT(32, 1, 4)   \
	Q4KTOUT(64, 2, 8)   \
	Q4KTOUT(96, 3, 12)

// func vecDotQ4_KTileVNNI(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int, nq int)
//
// out[a·outStride+r] = vecDotQ4_KAVX2(row r, act a, 256·nb) for r < 4,
// a < 4·nq, bit for bit; 1 ≤ nq ≤ 4.
TEXT ·vecDotQ4_KTileVNNI(SB), 0, $4416-64
	KTILE(Q4KTROW, 144)

// func vecDotQ5_KTileVNNI(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int, nq int)
//
// The Q4_K tile for Q5_K weights, bit for bit vecDotQ5_KAVX2 per pair:
// that kernel sums exactly as vecDotQ4_KAVX2 does, on 5-bit quants.
TEXT ·vecDotQ5_KTileVNNI(SB), 0, $4416-64
	KTILE(Q5KTROW, 176)

// Q4KVCONST loads the constants of the one-pair Q4_K steps into Z9–Z15.
#define Q4KVCONST \
	VMOVDQU64    q4ktperm<>(SB), Z15 \
	VMOVDQU64    q4ktshift<>(SB), Z14 \
	VPBROADCASTD q40tilenib<>(SB), Z13 \
	VMOVDQU64    q4ktsc<>+0(SB), Z12 \
	VMOVDQU64    q4ktsc<>+64(SB), Z11 \
	VMOVDQU64    q4ktsc<>+128(SB), Z10 \
	VMOVDQU64    q4ktsc<>+192(SB), Z9

// KVBLOCK adds the Q4_K (NIB Q4KTNIB) or Q5_K (Q5KTNIB) block at SI times
// the Q8_K block at DI to the accumulator Z0 (eight lanes of scaled sums,
// four of mins); R9, Z1 and the registers Q4KTSCALES names are scratch.
#define KVBLOCK(NIB) \
	MOVQ         SI, R9 \
	Q4KTSCALES \
	VMOVQ        AX, X1 \
	VPBROADCASTQ X1, Z1 \
	VPSHUFB      Z12, Z1, Z2 \
	VPSHUFB      Z11, Z1, Z3 \
	VPSHUFB      Z10, Z1, Z4 \
	VPSHUFB      Z9, Z1, Z5 \
	NIB(0, Z6) \
	VPMADDUBSW   4(DI), Z6, Z6 \
	VPMADDWD     Z2, Z6, Z7 \
	NIB(1, Z6) \
	VPMADDUBSW   68(DI), Z6, Z6 \
	VPDPWSSD     Z3, Z6, Z7 \
	NIB(2, Z6) \
	VPMADDUBSW   132(DI), Z6, Z6 \
	VPDPWSSD     Z4, Z6, Z7 \
	NIB(3, Z6) \
	VPMADDUBSW   196(DI), Z6, Z6 \
	VPDPWSSD     Z5, Z6, Z7 \
	VEXTRACTI64X4 $1, Z7, Y6 \
	VPADDD       Y6, Y7, Y7 \
	VMOVQ        R8, X1 \
	VPMOVZXBW    X1, X1 \
	VMOVDQU      260(DI), X6 \
	VPHADDW      276(DI), X6, X6 \
	VPMADDWD     X1, X6, X6 \
	VINSERTI32X4 $2, X6, Z7, Z7 \
	VCVTDQ2PS    Z7, Z7 \
	MOVL         (SI), AX \
	VMOVD        AX, X8 \
	VCVTPH2PS    X8, X8 \
	VPERMPS      Z8, Z15, Z8 \
	VMULPS.BCST  (DI), Z8, Z8 \
	VFMADD231PS  Z8, Z7, Z0

// Q4KVREDUCE leaves the sums minus the mins of Z0 in X0.
#define Q4KVREDUCE \
	VEXTRACTF32X4 $2, Z0, X3 \
	VEXTRACTF128  $1, Y0, X4 \
	VADDPS        X4, X0, X0 \
	VPERMILPS     $0x4e, X0, X4 \
	VADDPS        X4, X0, X0 \
	VPERMILPS     $0xb1, X0, X4 \
	VADDPS        X4, X0, X0 \
	VPERMILPS     $0x4e, X3, X4 \
	VADDPS        X4, X3, X3 \
	VPERMILPS     $0xb1, X3, X4 \
	VADDPS        X4, X3, X3 \
	VSUBSS        X3, X0, X0

// func vecDotQ4_KVNNI(row, act []byte, n int) float32
//
// vecDotQ4_KAVX2 with the Q4_K tile's steps for one pair (the integer lanes
// are the same exact sums, the float steps the same operations), so it
// agrees with both bit for bit. The accumulator stays in Z0.
TEXT ·vecDotQ4_KVNNI(SB), NOSPLIT, $0-60
	KVONE(Q4KTNIB, 144)

// func vecDotQ4_KRowsVNNI(rows *byte, rowStride, nrows int, act *byte, n int, out *float32)
//
// out[r] = vecDotQ4_KVNNI(row r, act, n) for r < nrows, rows rowStride
// bytes apart: the same steps, with the constants loaded once and no call
// per row, which is most of a 2048-wide row's cost otherwise; the row
// stream is prefetched 4 KiB ahead (see vecDotF16RowsAVX512).
TEXT ·vecDotQ4_KRowsVNNI(SB), NOSPLIT, $0-48
	KVROWS(Q4KTNIB, 144)

// func vecDotQ5_KVNNI(row, act []byte, n int) float32
//
// vecDotQ4_KVNNI for Q5_K weights: bit for bit vecDotQ5_KAVX2 and the Q5_K
// tile.
TEXT ·vecDotQ5_KVNNI(SB), NOSPLIT, $0-60
	KVONE(Q5KTNIB, 176)

// func vecDotQ5_KRowsVNNI(rows *byte, rowStride, nrows int, act *byte, n int, out *float32)
//
// vecDotQ4_KRowsVNNI for Q5_K weights.
TEXT ·vecDotQ5_KRowsVNNI(SB), NOSPLIT, $0-48
	KVROWS(Q5KTNIB, 176)
