//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// AVX2 + FMA + F16C dot products of the 2–4-bit types (vecdot_lowbit.go).
// Each block's integer sums are exact, as in the generic code; only the
// order of the float accumulation differs. Sizes were checked by the caller
// (CheckDot), and the activations come from QuantizeAct, whose quants lie in
// [−127, 127], so VPMADDUBSW never saturates (and, for Q3_K, Q8_K bsums that
// are the sums of their quants).

DATA lbnib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA lbnib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA lbnib<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA lbnib<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL lbnib<>(SB), RODATA|NOPTR, $32

DATA lbthree<>+0(SB)/8, $0x0303030303030303
DATA lbthree<>+8(SB)/8, $0x0303030303030303
DATA lbthree<>+16(SB)/8, $0x0303030303030303
DATA lbthree<>+24(SB)/8, $0x0303030303030303
GLOBL lbthree<>(SB), RODATA|NOPTR, $32

DATA lbfour<>+0(SB)/8, $0x0404040404040404
DATA lbfour<>+8(SB)/8, $0x0404040404040404
DATA lbfour<>+16(SB)/8, $0x0404040404040404
DATA lbfour<>+24(SB)/8, $0x0404040404040404
GLOBL lbfour<>(SB), RODATA|NOPTR, $32

DATA lbone8<>+0(SB)/8, $0x0101010101010101
DATA lbone8<>+8(SB)/8, $0x0101010101010101
DATA lbone8<>+16(SB)/8, $0x0101010101010101
DATA lbone8<>+24(SB)/8, $0x0101010101010101
GLOBL lbone8<>(SB), RODATA|NOPTR, $32

DATA lbones16<>+0(SB)/8, $0x0001000100010001
DATA lbones16<>+8(SB)/8, $0x0001000100010001
DATA lbones16<>+16(SB)/8, $0x0001000100010001
DATA lbones16<>+24(SB)/8, $0x0001000100010001
GLOBL lbones16<>(SB), RODATA|NOPTR, $32

DATA lb32w<>+0(SB)/8, $0x0020002000200020
DATA lb32w<>+8(SB)/8, $0x0020002000200020
DATA lb32w<>+16(SB)/8, $0x0020002000200020
DATA lb32w<>+24(SB)/8, $0x0020002000200020
GLOBL lb32w<>(SB), RODATA|NOPTR, $32

// A broadcast pair of int16 (a, b) spread to a in the low 128-bit lane and
// b in the high one: the scales of two consecutive 16-element sub-blocks.
DATA lbpair<>+0(SB)/8, $0x0100010001000100
DATA lbpair<>+8(SB)/8, $0x0100010001000100
DATA lbpair<>+16(SB)/8, $0x0302030203020302
DATA lbpair<>+24(SB)/8, $0x0302030203020302
GLOBL lbpair<>(SB), RODATA|NOPTR, $32

// The IQ4_NL levels and the doubled E2M1 values, in both 128-bit lanes for
// VPSHUFB.
DATA kvnl<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA kvnl<>+8(SB)/8, $0x7159453526190d01
DATA kvnl<>+16(SB)/8, $0xf6eaddcfbfad9881
DATA kvnl<>+24(SB)/8, $0x7159453526190d01
GLOBL kvnl<>(SB), RODATA|NOPTR, $32

DATA kvfp4<>+0(SB)/8, $0x0c08060403020100
DATA kvfp4<>+8(SB)/8, $0xf4f8fafcfdfeff00
DATA kvfp4<>+16(SB)/8, $0x0c08060403020100
DATA kvfp4<>+24(SB)/8, $0xf4f8fafcfdfeff00
GLOBL kvfp4<>(SB), RODATA|NOPTR, $32

// NLSUM leaves in Y6 the eight int32 lane sums of Σ W·y·v over 32
// elements: 16 index bytes at qo(SI) (element j low nibble, j+16 high), the
// level table in Y13, activations at yo(DI), W the int16 weights in WR (ones
// or a sub-block scale). The sign of each level moves onto its activation so
// VPMADDUBSW multiplies |v| ≤ 127 by y.
#define NLSUM(qo, yo, WR) \
	VMOVDQU     qo(SI), X4        \
	VPSRLW      $4, X4, X5        \
	VINSERTI128 $1, X5, Y4, Y4    \
	VPAND       Y14, Y4, Y4       \
	VPSHUFB     Y4, Y13, Y4       \
	VMOVDQU     yo(DI), Y5        \
	VPSIGNB     Y4, Y4, Y6        \
	VPSIGNB     Y4, Y5, Y5        \
	VPMADDUBSW  Y5, Y6, Y6        \
	VPMADDWD    WR, Y6, Y6

// NLBLOCK adds the IQ4_NL·Q8_0 block at xo(SI), yo(DI) to ACC.
#define NLBLOCK(xo, yo, ACC) \
	MOVWLZX      xo(SI), AX        \
	MOVWLZX      yo(DI), BX        \
	VMOVD        AX, X2            \
	VPINSRW      $1, BX, X2, X2    \
	VCVTPH2PS    X2, X2            \
	VMOVSHDUP    X2, X3            \
	VMULSS       X3, X2, X2        \
	VBROADCASTSS X2, Y2            \
	NLSUM(xo+2, yo+2, Y15)         \
	VCVTDQ2PS    Y6, Y6            \
	VFMADD231PS  Y2, Y6, ACC

// NLQUAD adds four consecutive blocks (weights bo(SI) bytes apart, Q8_0
// activations 34 bytes apart) to Y0 and Y1, their four block scales
// (computed together into 0(SP)) broadcast one by one.
#define NLQUAD(bo, qo) \
	VBROADCASTSS 0(SP), Y2           \
	NLSUM(qo, 2, Y15)                \
	VCVTDQ2PS    Y6, Y6              \
	VFMADD231PS  Y2, Y6, Y0          \
	VBROADCASTSS 4(SP), Y2           \
	NLSUM(bo+qo, 36, Y15)            \
	VCVTDQ2PS    Y6, Y6              \
	VFMADD231PS  Y2, Y6, Y1          \
	VBROADCASTSS 8(SP), Y2           \
	NLSUM(2*bo+qo, 70, Y15)          \
	VCVTDQ2PS    Y6, Y6              \
	VFMADD231PS  Y2, Y6, Y0          \
	VBROADCASTSS 12(SP), Y2          \
	NLSUM(3*bo+qo, 104, Y15)         \
	VCVTDQ2PS    Y6, Y6              \
	VFMADD231PS  Y2, Y6, Y1

// YSCALES4 puts the four activation block scales fp16(y.d) (34 bytes
// apart) as floats into X3.
#define YSCALES4 \
	MOVWLZX      (DI), AX            \
	VMOVD        AX, X3              \
	VPINSRW      $1, 34(DI), X3, X3  \
	VPINSRW      $2, 68(DI), X3, X3  \
	VPINSRW      $3, 102(DI), X3, X3 \
	VCVTPH2PS    X3, X3

// func vecDotIQ4_NLAVX2(row, act []byte, n int) float32
TEXT ·vecDotIQ4_NLAVX2(SB), NOSPLIT, $16-60
	MOVQ    row_base+0(FP), SI
	MOVQ    act_base+24(FP), DI
	MOVQ    n+48(FP), CX
	SHRQ    $5, CX
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VMOVDQU lbones16<>(SB), Y15
	VMOVDQU lbnib<>(SB), Y14
	VMOVDQU kvnl<>(SB), Y13
	MOVQ    CX, DX
	SHRQ    $2, DX
	JE      nlrest

	// Four blocks per iteration: their scales converted and multiplied
	// together, alternating between two accumulators.
nlquad:
	MOVWLZX     (SI), AX
	VMOVD       AX, X2
	VPINSRW     $1, 18(SI), X2, X2
	VPINSRW     $2, 36(SI), X2, X2
	VPINSRW     $3, 54(SI), X2, X2
	VCVTPH2PS   X2, X2
	YSCALES4
	VMULPS      X3, X2, X2
	VMOVUPS     X2, (SP)
	NLQUAD(18, 2)
	ADDQ $72, SI
	ADDQ $136, DI
	DECQ DX
	JNZ  nlquad

nlrest:
	ANDQ $3, CX
	JE   nldone

nlone:
	NLBLOCK(0, 0, Y0)
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  nlone

nldone:
	VADDPS     Y1, Y0, Y0
	HSUM8(Y0, X0, X1)
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// FP4BLOCK adds the MXFP4·Q8_0 block at xo(SI), yo(DI) to ACC. The scale
// e8m0Half(e) is (e−1)<<23, or 0x00200000<<e for the subnormal e < 2.
#define FP4BLOCK(xo, yo, ACC) \
	MOVBLZX      xo(SI), AX        \
	LEAL         -1(AX), BX        \
	SHLL         $23, BX           \
	MOVL         $0x00200000, DX   \
	MOVL         AX, CX            \
	SHLL         CX, DX            \
	CMPL         AX, $2            \
	CMOVLCS      DX, BX            \
	VMOVD        BX, X3            \
	MOVWLZX      yo(DI), AX        \
	VMOVD        AX, X2            \
	VCVTPH2PS    X2, X2            \
	VMULSS       X3, X2, X2        \
	VBROADCASTSS X2, Y2            \
	NLSUM(xo+1, yo+2, Y15)         \
	VCVTDQ2PS    Y6, Y6            \
	VFMADD231PS  Y2, Y6, ACC

// func vecDotMXFP4AVX2(row, act []byte, n int) float32
TEXT ·vecDotMXFP4AVX2(SB), NOSPLIT, $16-60
	MOVQ    row_base+0(FP), SI
	MOVQ    act_base+24(FP), DI
	MOVQ    n+48(FP), R11
	SHRQ    $5, R11
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VMOVDQU lbones16<>(SB), Y15
	VMOVDQU lbnib<>(SB), Y14
	VMOVDQU kvfp4<>(SB), Y13
	MOVQ    R11, R10
	SHRQ    $2, R10
	JE      fp4rest

	// Four blocks per iteration: e8m0Half of the four exponents from
	// e8m0HalfTab (vecdot_lowbittile_amd64.s).
	LEAQ        ·e8m0HalfTab(SB), R9
fp4quad:
	MOVBLZX     (SI), AX
	MOVBLZX     17(SI), BX
	MOVBLZX     34(SI), CX
	MOVBLZX     51(SI), DX
	VMOVSS      (R9)(AX*4), X2
	VINSERTPS   $0x10, (R9)(BX*4), X2, X2
	VINSERTPS   $0x20, (R9)(CX*4), X2, X2
	VINSERTPS   $0x30, (R9)(DX*4), X2, X2
	YSCALES4
	VMULPS      X3, X2, X2
	VMOVUPS     X2, (SP)
	NLQUAD(17, 1)
	ADDQ $68, SI
	ADDQ $136, DI
	DECQ R10
	JNZ  fp4quad

fp4rest:
	ANDQ $3, R11
	JE   fp4done

fp4one:
	FP4BLOCK(0, 0, Y0)
	ADDQ $17, SI
	ADDQ $34, DI
	DECQ R11
	JNZ  fp4one

fp4done:
	VADDPS     Y1, Y0, Y0
	HSUM8(Y0, X0, X1)
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// XSSUB adds sub-block ib of an IQ4_XS block, its lane sums times its
// scale ls−32 (ls: nibble lsh of byte lo(SI), bits 2ib..2ib+1 of R12,
// broadcast as int16 into the VPMADDWD step), to the int32 lanes of Y9.
#define XSSUB(ib, lo, lsh) \
	MOVBLZX      lo(SI), AX       \
	SHRL         $lsh, AX         \
	ANDL         $15, AX          \
	MOVL         R12, BX          \
	SHRL         $(2*ib), BX      \
	ANDL         $3, BX           \
	SHLL         $4, BX           \
	ORL          BX, AX           \
	SUBL         $32, AX          \
	VMOVD        AX, X7           \
	VPBROADCASTW X7, Y7           \
	NLSUM(8+16*ib, 4+32*ib, Y7)   \
	VPADDD       Y6, Y9, Y9

// func vecDotIQ4_XSAVX2(row, act []byte, n int) float32
TEXT ·vecDotIQ4_XSAVX2(SB), NOSPLIT, $0-60
	MOVQ    row_base+0(FP), SI
	MOVQ    act_base+24(FP), DI
	MOVQ    n+48(FP), CX
	SHRQ    $8, CX
	VXORPS  Y0, Y0, Y0
	VMOVDQU lbones16<>(SB), Y15
	VMOVDQU lbnib<>(SB), Y14
	VMOVDQU kvnl<>(SB), Y13
	TESTQ   CX, CX
	JE      xsdone

xsloop:
	MOVWLZX      (SI), AX
	VMOVD        AX, X2
	VCVTPH2PS    X2, X2
	VMULSS       (DI), X2, X2
	VBROADCASTSS X2, Y2
	MOVWLZX      2(SI), R12
	VPXOR        Y9, Y9, Y9
	XSSUB(0, 4, 0)
	XSSUB(1, 4, 4)
	XSSUB(2, 5, 0)
	XSSUB(3, 5, 4)
	XSSUB(4, 6, 0)
	XSSUB(5, 6, 4)
	XSSUB(6, 7, 0)
	XSSUB(7, 7, 4)
	VCVTDQ2PS    Y9, Y9
	VFMADD231PS  Y2, Y9, Y0
	ADDQ         $136, SI
	ADDQ         $292, DI
	DECQ         CX
	JNZ          xsloop

xsdone:
	HSUM8(Y0, X0, X1)
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// K2CHUNK multiplies the 32 two-bit quants at bit pair j of the 32 bytes in
// Y10 (elements 128h+32j..+31: sub-blocks 8h+2j and 8h+2j+1) by their
// activations and by the two sub-blocks' int16 scales at soff(SP), and adds
// the int32 lane sums to Y9. For Q3_K, M (0 or 4 per element, from hmask)
// is subtracted: q = low bits − M.
#define K2CHUNK(j, yoff, soff) \
	VPSRLW       $(2*j), Y10, Y4  \
	VPAND        Y14, Y4, Y4      \
	VPMADDUBSW   yoff(DI), Y4, Y4 \
	VPBROADCASTD soff(SP), Y7     \
	VPSHUFB      Y13, Y7, Y7      \
	VPMADDWD     Y7, Y4, Y4       \
	VPADDD       Y4, Y9, Y9

// func vecDotQ2_KAVX2(row, act []byte, n int) float32
TEXT ·vecDotQ2_KAVX2(SB), NOSPLIT, $32-60
	MOVQ    row_base+0(FP), SI
	MOVQ    act_base+24(FP), DI
	MOVQ    n+48(FP), CX
	SHRQ    $8, CX
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VMOVDQU lbthree<>(SB), Y14
	VMOVDQU lbpair<>(SB), Y13
	VMOVDQU lbnib<>(SB), Y12
	TESTQ   CX, CX
	JE      q2kdone

q2kloop:
	// dall = y.d·d into Y2, dmin = y.d·dmin into Y3.
	MOVL         80(SI), AX
	VMOVD        AX, X2
	VCVTPH2PS    X2, X2
	VBROADCASTSS (DI), X3
	VMULPS       X2, X3, X2
	VMOVSHDUP    X2, X3
	VBROADCASTSS X2, Y2
	VBROADCASTSS X3, Y3
	// Scales (low nibbles) as int16 to (SP); mins (high nibbles) times the
	// 16 bsums into Y1 through dmin.
	VMOVDQU      (SI), X5
	VPAND        X12, X5, X6
	VPMOVZXBW    X6, Y6
	VMOVDQU      Y6, (SP)
	VPSRLW       $4, X5, X5
	VPAND        X12, X5, X5
	VPMOVZXBW    X5, Y5
	VPMADDWD     260(DI), Y5, Y5
	VCVTDQ2PS    Y5, Y5
	VFMADD231PS  Y3, Y5, Y1
	VPXOR        Y9, Y9, Y9
	VMOVDQU      16(SI), Y10
	K2CHUNK(0, 4, 0)
	K2CHUNK(1, 36, 4)
	K2CHUNK(2, 68, 8)
	K2CHUNK(3, 100, 12)
	VMOVDQU      48(SI), Y10
	K2CHUNK(0, 132, 16)
	K2CHUNK(1, 164, 20)
	K2CHUNK(2, 196, 24)
	K2CHUNK(3, 228, 28)
	VCVTDQ2PS    Y9, Y9
	VFMADD231PS  Y2, Y9, Y0
	ADDQ         $84, SI
	ADDQ         $292, DI
	DECQ         CX
	JNZ          q2kloop

q2kdone:
	VSUBPS     Y1, Y0, Y0
	HSUM8(Y0, X0, X1)
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// K3CHUNK is K2CHUNK for Q3_K with the quants offset to u = q+4 in 0..7:
// the two low bits, plus 4 where hmask (Y11) has the chunk's bit (the one
// set in every byte of Y8, doubled for the next chunk). The block's
// −4·Σ sc·bsum was subtracted from Y9 beforehand.
#define K3CHUNK(j, yoff, soff) \
	VPSRLW       $(2*j), Y10, Y4  \
	VPAND        Y14, Y4, Y4      \
	VPAND        Y11, Y8, Y5      \
	VPCMPEQB     Y8, Y5, Y5       \
	VPAND        Y12, Y5, Y5      \
	VPOR         Y5, Y4, Y4       \
	VPADDB       Y8, Y8, Y8       \
	VPMADDUBSW   yoff(DI), Y4, Y4 \
	VPBROADCASTD soff(SP), Y7     \
	VPSHUFB      Y13, Y7, Y7      \
	VPMADDWD     Y7, Y4, Y4       \
	VPADDD       Y4, Y9, Y9

// func vecDotQ3_KAVX2(row, act []byte, n int) float32
TEXT ·vecDotQ3_KAVX2(SB), NOSPLIT, $32-60
	MOVQ    row_base+0(FP), SI
	MOVQ    act_base+24(FP), DI
	MOVQ    n+48(FP), CX
	SHRQ    $8, CX
	VXORPS  Y0, Y0, Y0
	VMOVDQU lbthree<>(SB), Y14
	VMOVDQU lbpair<>(SB), Y13
	VMOVDQU lbfour<>(SB), Y12
	TESTQ   CX, CX
	JE      q3kdone

q3kloop:
	MOVWLZX      108(SI), AX
	VMOVD        AX, X2
	VCVTPH2PS    X2, X2
	VMULSS       (DI), X2, X2
	VBROADCASTSS X2, Y2
	// The sixteen 6-bit scales (ggml's kmask unpacking), less 32, as int16
	// to (SP).
	MOVL         96(SI), AX
	MOVL         100(SI), BX
	MOVL         104(SI), DX
	MOVL         AX, R8
	ANDL         $0x0f0f0f0f, R8
	MOVL         DX, R9
	ANDL         $0x03030303, R9
	SHLL         $4, R9
	ORL          R9, R8
	MOVL         BX, R9
	ANDL         $0x0f0f0f0f, R9
	MOVL         DX, R10
	SHRL         $2, R10
	ANDL         $0x03030303, R10
	SHLL         $4, R10
	ORL          R10, R9
	SHLQ         $32, R9
	ORQ          R9, R8
	SHRL         $4, AX
	ANDL         $0x0f0f0f0f, AX
	MOVL         DX, R10
	SHRL         $4, R10
	ANDL         $0x03030303, R10
	SHLL         $4, R10
	ORL          R10, AX
	SHRL         $4, BX
	ANDL         $0x0f0f0f0f, BX
	MOVL         DX, R10
	SHRL         $6, R10
	ANDL         $0x03030303, R10
	SHLL         $4, R10
	ORL          R10, BX
	SHLQ         $32, BX
	ORQ          BX, AX
	VMOVQ        R8, X5
	VPINSRQ      $1, AX, X5, X5
	VPMOVZXBW    X5, Y5
	VPSUBW       lb32w<>(SB), Y5, Y5
	VMOVDQU      Y5, (SP)
	// Σ sc·y·q = Σ sc·y·u − 4·Σ sc·bsum, bsum the 16-value activation sums.
	VPMADDWD     260(DI), Y5, Y6
	VPSLLD       $2, Y6, Y6
	VPXOR        Y9, Y9, Y9
	VPSUBD       Y6, Y9, Y9
	VMOVDQU      (SI), Y11
	VMOVDQU      lbone8<>(SB), Y8
	VMOVDQU      32(SI), Y10
	K3CHUNK(0, 4, 0)
	K3CHUNK(1, 36, 4)
	K3CHUNK(2, 68, 8)
	K3CHUNK(3, 100, 12)
	VMOVDQU      64(SI), Y10
	K3CHUNK(0, 132, 16)
	K3CHUNK(1, 164, 20)
	K3CHUNK(2, 196, 24)
	K3CHUNK(3, 228, 28)
	VCVTDQ2PS    Y9, Y9
	VFMADD231PS  Y2, Y9, Y0
	ADDQ         $110, SI
	ADDQ         $292, DI
	DECQ         CX
	JNZ          q3kloop

q3kdone:
	HSUM8(Y0, X0, X1)
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET
