//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"
#include "rownext_amd64.h"

// AVX2 + FMA + F16C dot products. Each kernel mirrors the generic Go function
// of the same name without the suffix (vecdot.go): the integer sums inside a
// block are exact, and only the order of the float accumulation across lanes
// and blocks differs. The callers (Kernels.VecDot and friends) have already
// checked that row and act hold exactly n elements, so the kernels read
// exactly that many bytes and never past them.

DATA nib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nib<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nib<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nib<>(SB), RODATA|NOPTR, $32

DATA eights<>+0(SB)/8, $0x0808080808080808
DATA eights<>+8(SB)/8, $0x0808080808080808
DATA eights<>+16(SB)/8, $0x0808080808080808
DATA eights<>+24(SB)/8, $0x0808080808080808
GLOBL eights<>(SB), RODATA|NOPTR, $32

DATA bit4<>+0(SB)/8, $0x1010101010101010
DATA bit4<>+8(SB)/8, $0x1010101010101010
DATA bit4<>+16(SB)/8, $0x1010101010101010
DATA bit4<>+24(SB)/8, $0x1010101010101010
GLOBL bit4<>(SB), RODATA|NOPTR, $32

DATA bits45<>+0(SB)/8, $0x3030303030303030
DATA bits45<>+8(SB)/8, $0x3030303030303030
DATA bits45<>+16(SB)/8, $0x3030303030303030
DATA bits45<>+24(SB)/8, $0x3030303030303030
GLOBL bits45<>(SB), RODATA|NOPTR, $32

DATA ones16<>+0(SB)/8, $0x0001000100010001
DATA ones16<>+8(SB)/8, $0x0001000100010001
DATA ones16<>+16(SB)/8, $0x0001000100010001
DATA ones16<>+24(SB)/8, $0x0001000100010001
GLOBL ones16<>(SB), RODATA|NOPTR, $32

// Spreads a broadcast pair of int16 (a, b) into a in the low 128-bit lane and
// b in the high one: the scales of two consecutive 16-element Q6_K groups.
DATA pairspread<>+0(SB)/8, $0x0100010001000100
DATA pairspread<>+8(SB)/8, $0x0100010001000100
DATA pairspread<>+16(SB)/8, $0x0302030203020302
DATA pairspread<>+24(SB)/8, $0x0302030203020302
GLOBL pairspread<>(SB), RODATA|NOPTR, $32


// func vecDotF32AVX2(row, act []byte, n int) float32
TEXT ·vecDotF32AVX2(SB), NOSPLIT, $0-60
	MOVQ   row_base+0(FP), SI
	MOVQ   act_base+24(FP), DI
	MOVQ   n+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

	// Four independent accumulators hide the FMA latency.
f32loop32:
	CMPQ        CX, $32
	JL          f32loop8
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         f32loop32

f32loop8:
	CMPQ        CX, $8
	JL          f32reduce
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         f32loop8

f32reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM8(Y0, X0, X1)

f32tail:
	TESTQ       CX, CX
	JE          f32done
	VMOVSS      (SI), X4
	VFMADD231SS (DI), X4, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         f32tail

f32done:
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// F16REST finishes an F16 dot product whose 32-element steps left their
// four accumulators in Y0–Y3 and CX < 32 elements at SI and DI: the
// 8-element steps into Y0, the reduction into X0 as HSUM8 does, then the
// tail one by one, and jumps to DONE. AX, BX, Y4, Y5 and Y8 are scratch.
#define F16REST(DONE) \
f16loop8: CMPQ        CX, $8 \
	JL          f16reduce \
	VCVTPH2PS   (SI), Y4 \
	VCVTPH2PS   (DI), Y8 \
	VFMADD231PS Y8, Y4, Y0 \
	ADDQ        $16, SI \
	ADDQ        $16, DI \
	SUBQ        $8, CX \
	JMP         f16loop8 \
f16reduce: VADDPS Y1, Y0, Y0 \
	VADDPS Y3, Y2, Y2 \
	VADDPS Y2, Y0, Y0 \
	HSUM8(Y0, X0, X1) \
f16tail: TESTQ       CX, CX \
	JE          DONE \
	MOVWLZX     (SI), AX \
	MOVWLZX     (DI), BX \
	VMOVD       AX, X4 \
	VMOVD       BX, X5 \
	VCVTPH2PS   X4, X4 \
	VCVTPH2PS   X5, X5 \
	VFMADD231SS X5, X4, X0 \
	ADDQ        $2, SI \
	ADDQ        $2, DI \
	DECQ        CX \
	JMP         f16tail

// func vecDotF16AVX2(row, act []byte, n int) float32
TEXT ·vecDotF16AVX2(SB), NOSPLIT, $0-60
	MOVQ   row_base+0(FP), SI
	MOVQ   act_base+24(FP), DI
	MOVQ   n+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f16loop32:
	CMPQ        CX, $32
	JL          f16loop8
	VCVTPH2PS   (SI), Y4
	VCVTPH2PS   16(SI), Y5
	VCVTPH2PS   32(SI), Y6
	VCVTPH2PS   48(SI), Y7
	VCVTPH2PS   (DI), Y8
	VCVTPH2PS   16(DI), Y9
	VCVTPH2PS   32(DI), Y10
	VCVTPH2PS   48(DI), Y11
	VFMADD231PS Y8, Y4, Y0
	VFMADD231PS Y9, Y5, Y1
	VFMADD231PS Y10, Y6, Y2
	VFMADD231PS Y11, Y7, Y3
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $32, CX
	JMP         f16loop32

	F16REST(f16done)

f16done:
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// func vecDotF16RowsAVX512(rows *byte, rowStride, nrows int, act *byte, n int, out *float32)
//
// out[r] = vecDotF16AVX2(row r, act, n) for r < nrows, rows rowStride bytes
// apart, bit for bit: the 32-element steps run on two zmm accumulators, Z0
// holding the one-row kernel's Y0 and Y1 lane for lane and Z1 its Y2 and
// Y3; the 8-element steps, the reduction and the tail are its own. Each
// step prefetches the row stream 4 KiB ahead: decode reads every weight
// once, and with the hardware prefetchers alone it ran 7–13% slower (1, 2,
// 8 and 16 KiB ahead measured worse than 4).
TEXT ·vecDotF16RowsAVX512(SB), NOSPLIT, $0-48
	MOVQ  rows+0(FP), R8
	MOVQ  nrows+16(FP), R9
	MOVQ  act+24(FP), R10
	TESTQ R9, R9
	JE    f16rdone

f16rrow:
	MOVQ   R8, SI
	MOVQ   R10, DI
	MOVQ   n+32(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1

f16rloop32:
	CMPQ        CX, $32
	JL          f16rsplit
	PREFETCHT0  4096(SI)
	VCVTPH2PS   (SI), Z4
	VCVTPH2PS   32(SI), Z5
	VCVTPH2PS   (DI), Z8
	VCVTPH2PS   32(DI), Z9
	VFMADD231PS Z8, Z4, Z0
	VFMADD231PS Z9, Z5, Z1
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $32, CX
	JMP         f16rloop32

f16rsplit:
	VEXTRACTF64X4 $1, Z1, Y3
	VMOVAPS       Y1, Y2
	VEXTRACTF64X4 $1, Z0, Y1

	F16REST(f16rout)

f16rout:
	ROWNEXT(R8, R9, f16rrow)

f16rdone:
	VZEROUPPER
	RET

// func vecDotBF16AVX2(row, act []byte, n int) float32
TEXT ·vecDotBF16AVX2(SB), NOSPLIT, $0-60
	MOVQ   row_base+0(FP), SI
	MOVQ   act_base+24(FP), DI
	MOVQ   n+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

	// A bfloat16 is the top half of a float32: widen to 32 bits, shift up.
bf16loop32:
	CMPQ        CX, $32
	JL          bf16loop8
	VPMOVZXWD   (SI), Y4
	VPMOVZXWD   16(SI), Y5
	VPMOVZXWD   32(SI), Y6
	VPMOVZXWD   48(SI), Y7
	VPMOVZXWD   (DI), Y8
	VPMOVZXWD   16(DI), Y9
	VPMOVZXWD   32(DI), Y10
	VPMOVZXWD   48(DI), Y11
	VPSLLD      $16, Y4, Y4
	VPSLLD      $16, Y5, Y5
	VPSLLD      $16, Y6, Y6
	VPSLLD      $16, Y7, Y7
	VPSLLD      $16, Y8, Y8
	VPSLLD      $16, Y9, Y9
	VPSLLD      $16, Y10, Y10
	VPSLLD      $16, Y11, Y11
	VFMADD231PS Y8, Y4, Y0
	VFMADD231PS Y9, Y5, Y1
	VFMADD231PS Y10, Y6, Y2
	VFMADD231PS Y11, Y7, Y3
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $32, CX
	JMP         bf16loop32

bf16loop8:
	CMPQ        CX, $8
	JL          bf16reduce
	VPMOVZXWD   (SI), Y4
	VPMOVZXWD   (DI), Y8
	VPSLLD      $16, Y4, Y4
	VPSLLD      $16, Y8, Y8
	VFMADD231PS Y8, Y4, Y0
	ADDQ        $16, SI
	ADDQ        $16, DI
	SUBQ        $8, CX
	JMP         bf16loop8

bf16reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM8(Y0, X0, X1)

bf16tail:
	TESTQ       CX, CX
	JE          bf16done
	MOVWLZX     (SI), AX
	MOVWLZX     (DI), BX
	SHLL        $16, AX
	SHLL        $16, BX
	VMOVD       AX, X4
	VMOVD       BX, X5
	VFMADD231SS X5, X4, X0
	ADDQ        $2, SI
	ADDQ        $2, DI
	DECQ        CX
	JMP         bf16tail

bf16done:
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// Q8BLOCKSCALE broadcasts fp16(x.d)·fp16(y.d) for the blocks at xo(SI) and
// yo(DI) into all lanes of Y2, rounded once to float32 as the generic code
// does.
#define Q8BLOCKSCALE(xo, yo) \
	MOVWLZX      xo(SI), AX   \
	MOVWLZX      yo(DI), BX   \
	VMOVD        AX, X2       \
	VPINSRW      $1, BX, X2, X2 \
	VCVTPH2PS    X2, X2       \
	VMOVSHDUP    X2, X3       \
	VMULSS       X3, X2, X2   \
	VBROADCASTSS X2, Y2

// Q8INT leaves in T the eight int32 lane sums of the Q8_0·Q8_0 block at
// xo(SI), yo(DI), four products each. VPMADDUBSW multiplies unsigned by
// signed bytes, so the sign of each weight moves onto its activation. That
// is exact while the activation is not −128, which the activation
// quantizers never produce: the pair sums stay within ±2·128·127 and never
// saturate.
#define Q8INT(xo, yo, T) \
	VMOVDQU     (xo+2)(SI), Y4    \
	VMOVDQU     (yo+2)(DI), Y5    \
	VPSIGNB     Y4, Y4, T         \
	VPSIGNB     Y4, Y5, Y5        \
	VPMADDUBSW  Y5, T, T          \
	VPMADDWD    Y15, T, T

// Q40INT is Q8INT for the Q4_0·Q8_0 block at xo(SI), yo(DI). The nibbles q
// stay unsigned: Σ(q−8)·y = Σq·y − Σ8·y, both through VPMADDUBSW, exact for
// every activation byte.
#define Q40INT(xo, yo, T) \
	VMOVDQU     (xo+2)(SI), X4    \
	VPSRLW      $4, X4, X5        \
	VINSERTI128 $1, X5, Y4, Y4    \
	VPAND       Y14, Y4, Y4       \
	VMOVDQU     (yo+2)(DI), Y5    \
	VPMADDUBSW  Y5, Y4, T         \
	VPMADDUBSW  Y5, Y13, Y7       \
	VPSUBW      Y7, T, T          \
	VPMADDWD    Y15, T, T

// The accumulation order, shared with the register tiles (gen_q8tile.py,
// which fold two pairs' sums into one register): VPHADDD folds a block's
// eight lane sums to four, (e0+e1, e2+e3) in lanes 0, 1 and (e4+e5, e6+e7)
// in lanes 4, 5; each of those lanes takes fp16(x.d)·fp16(y.d) times its
// sum by one fused multiply-add per block, in block order; HSUMQ8 reduces
// them as (l0+l4)+(l1+l5). Lanes 2, 3, 6 and 7 are scratch.

// QBLOCK adds the block at xo(SI), yo(DI) (INT: Q8INT or Q40INT) to ACC.
#define QBLOCK(INT, xo, yo, ACC) \
	INT(xo, yo, Y6)               \
	VPHADDD     Y6, Y6, Y6        \
	VCVTDQ2PS   Y6, Y6            \
	Q8BLOCKSCALE(xo, yo)          \
	VFMADD231PS Y2, Y6, ACC

// Q8BLOCKSCALE2 is Q8BLOCKSCALE for two blocks at once, the first's scale
// product into all lanes of Y2 and the second's (at xo2, yo2) into Y3.
#define Q8BLOCKSCALE2(xo, yo, xo2, yo2) \
	MOVWLZX      xo(SI), AX          \
	VMOVD        AX, X2              \
	VPINSRW      $1, yo(DI), X2, X2  \
	VPINSRW      $2, xo2(SI), X2, X2 \
	VPINSRW      $3, yo2(DI), X2, X2 \
	VCVTPH2PS    X2, X2              \
	VMOVSHDUP    X2, X3              \
	VMULPS       X3, X2, X2          \
	VPERMILPS    $0xaa, X2, X3       \
	VBROADCASTSS X2, Y2              \
	VBROADCASTSS X3, Y3

// QBLOCK2 adds two consecutive blocks, the second at xo2(SI), yo2(DI), to
// ACC in the same order as two QBLOCKs, with one VPHADDD and one
// conversion: the second block's folded sums land in lanes 2, 3, 6, 7 and
// are moved to 0, 1, 4, 5 for their multiply-add.
#define QBLOCK2(INT, xo, yo, xo2, yo2, ACC) \
	INT(xo, yo, Y6)               \
	INT(xo2, yo2, Y8)             \
	VPHADDD     Y8, Y6, Y6        \
	VCVTDQ2PS   Y6, Y6            \
	Q8BLOCKSCALE2(xo, yo, xo2, yo2) \
	VFMADD231PS Y2, Y6, ACC       \
	VPERMILPS   $0x4e, Y6, Y6     \
	VFMADD231PS Y3, Y6, ACC

// HSUMQ8 reduces the accumulator of QBLOCK and QBLOCK2 to (l0+l4)+(l1+l5)
// in lane 0 of X.
#define HSUMQ8(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS       T, X, X  \
	VPERMILPS    $0xb1, X, T \
	VADDPS       T, X, X

// func vecDotQ8_0AVX2(row, act []byte, n int) float32
TEXT ·vecDotQ8_0AVX2(SB), NOSPLIT, $0-60
	MOVQ    row_base+0(FP), SI
	MOVQ    act_base+24(FP), DI
	MOVQ    n+48(FP), CX
	SHRQ    $5, CX
	VXORPS  Y0, Y0, Y0
	VMOVDQU ones16<>(SB), Y15

	// Two blocks per iteration (QBLOCK2), in the order the register
	// tiles keep per pair, so they match this kernel bit for bit.
	MOVQ  CX, DX
	SHRQ  $1, DX
	JE    q8one

q8pair:
	QBLOCK2(Q8INT, 0, 0, 34, 34, Y0)
	ADDQ $68, SI
	ADDQ $68, DI
	DECQ DX
	JNZ  q8pair

q8one:
	TESTQ $1, CX
	JE    q8done
	QBLOCK(Q8INT, 0, 0, Y0)

q8done:
	HSUMQ8(Y0, X0, X1)
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// func vecDotQ4_0AVX2(row, act []byte, n int) float32
TEXT ·vecDotQ4_0AVX2(SB), NOSPLIT, $0-60
	MOVQ    row_base+0(FP), SI
	MOVQ    act_base+24(FP), DI
	MOVQ    n+48(FP), CX
	SHRQ    $5, CX
	VXORPS  Y0, Y0, Y0
	VMOVDQU ones16<>(SB), Y15
	VMOVDQU nib<>(SB), Y14
	VMOVDQU eights<>(SB), Y13
	MOVQ    CX, DX
	SHRQ    $1, DX
	JE      q40one

q40pair:
	QBLOCK2(Q40INT, 0, 0, 18, 34, Y0)
	ADDQ $36, SI
	ADDQ $68, DI
	DECQ DX
	JNZ  q40pair

q40one:
	TESTQ $1, CX
	JE    q40done
	QBLOCK(Q40INT, 0, 0, Y0)

q40done:
	HSUMQ8(Y0, X0, X1)
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// KSCALES unpacks the eight 6-bit scales and mins of a Q4_K/Q5_K block at SI
// (ggml's get_scale_min_k4 for all j at once): scales as int16 to 0(SP),
// mins as int16 into X6.
#define KSCALES \
	MOVL    4(SI), AX            \
	MOVL    8(SI), BX            \
	MOVL    12(SI), DX           \
	MOVL    AX, R8               \
	SHRL    $6, R8               \
	ANDL    $0x03030303, R8      \
	SHLL    $4, R8               \
	MOVL    DX, R9               \
	ANDL    $0x0f0f0f0f, R9      \
	ORL     R9, R8               \
	MOVL    BX, R10              \
	SHRL    $6, R10              \
	ANDL    $0x03030303, R10     \
	SHLL    $4, R10              \
	SHRL    $4, DX               \
	ANDL    $0x0f0f0f0f, DX      \
	ORL     DX, R10              \
	ANDL    $0x3f3f3f3f, AX      \
	ANDL    $0x3f3f3f3f, BX      \
	SHLQ    $32, R8              \
	ORQ     R8, AX               \
	SHLQ    $32, R10             \
	ORQ     R10, BX              \
	VMOVQ   AX, X5               \
	VPMOVZXBW X5, X5             \
	VMOVDQU X5, (SP)             \
	VMOVQ   BX, X6               \
	VPMOVZXBW X6, X6

// KPROLOGUE loads d·y.d into all lanes of Y3 and dmin·y.d into X4, and adds
// Σ mins·bsums (pairs of 16-element sums make one 32-element sub-block) to
// the four float lanes of X1.
#define KPROLOGUE \
	MOVL         (SI), AX        \
	VMOVD        AX, X2          \
	VCVTPH2PS    X2, X2          \
	VBROADCASTSS (DI), X3        \
	VMULPS       X3, X2, X2      \
	VBROADCASTSS X2, Y3          \
	VMOVSHDUP    X2, X4          \
	VBROADCASTSS X4, X4          \
	KSCALES                      \
	VMOVDQU      260(DI), X7     \
	VPHADDW      276(DI), X7, X7 \
	VPMADDWD     X6, X7, X7      \
	VCVTDQ2PS    X7, X7          \
	VFMADD231PS  X4, X7, X1

// KGROUP multiplies the 64 quants of group g, low nibbles in Y10 and high
// nibbles in Y11 (unsigned), with the activations and their sub-block scales
// and adds the int32 lane sums to Y9.
#define KGROUP(g) \
	VPMADDUBSW   (4+64*g)(DI), Y10, Y10  \
	VPMADDUBSW   (36+64*g)(DI), Y11, Y11 \
	VPBROADCASTW (4*g)(SP), Y12          \
	VPBROADCASTW (4*g+2)(SP), Y13        \
	VPMADDWD     Y12, Y10, Y10           \
	VPMADDWD     Y13, Y11, Y11           \
	VPADDD       Y10, Y9, Y9             \
	VPADDD       Y11, Y9, Y9

#define Q4KNIBBLES(g) \
	VMOVDQU (16+32*g)(SI), Y10 \
	VPSRLW  $4, Y10, Y11       \
	VPAND   Y15, Y10, Y10      \
	VPAND   Y15, Y11, Y11

// func vecDotQ4_KAVX2(row, act []byte, n int) float32
TEXT ·vecDotQ4_KAVX2(SB), NOSPLIT, $16-60
	MOVQ    row_base+0(FP), SI
	MOVQ    act_base+24(FP), DI
	MOVQ    n+48(FP), CX
	SHRQ    $8, CX
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VMOVDQU nib<>(SB), Y15
	TESTQ   CX, CX
	JE      q4kdone

q4kloop:
	KPROLOGUE
	VPXOR       Y9, Y9, Y9
	Q4KNIBBLES(0)
	KGROUP(0)
	Q4KNIBBLES(1)
	KGROUP(1)
	Q4KNIBBLES(2)
	KGROUP(2)
	Q4KNIBBLES(3)
	KGROUP(3)
	VCVTDQ2PS   Y9, Y9
	VFMADD231PS Y3, Y9, Y0
	ADDQ        $144, SI
	ADDQ        $292, DI
	DECQ        CX
	JNZ         q4kloop

q4kdone:
	HSUM8(Y0, X0, X2)
	VPERMILPS  $0x4e, X1, X2
	VADDPS     X2, X1, X1
	VPERMILPS  $0xb1, X1, X2
	VADDPS     X2, X1, X1
	VSUBSS     X1, X0, X0
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// Q5KQUANTS builds the 5-bit quants of group g: nibbles as in Q4_K plus bit
// 2g (low half) and 2g+1 (high half) of each qh byte (Y14) moved to bit 4.
// Shifting whole 16-bit words moves both bytes' bits alike, and the 0x10
// mask drops what crosses from the neighbouring byte.
#define Q5KQUANTS(g, LOP, ls, HOP, hs) \
	VMOVDQU (48+32*g)(SI), Y10 \
	VPSRLW  $4, Y10, Y11       \
	VPAND   Y15, Y10, Y10      \
	VPAND   Y15, Y11, Y11      \
	LOP     $ls, Y14, Y12      \
	HOP     $hs, Y14, Y13      \
	VPAND   Y8, Y12, Y12       \
	VPAND   Y8, Y13, Y13       \
	VPOR    Y12, Y10, Y10      \
	VPOR    Y13, Y11, Y11

// func vecDotQ5_KAVX2(row, act []byte, n int) float32
TEXT ·vecDotQ5_KAVX2(SB), NOSPLIT, $16-60
	MOVQ    row_base+0(FP), SI
	MOVQ    act_base+24(FP), DI
	MOVQ    n+48(FP), CX
	SHRQ    $8, CX
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VMOVDQU nib<>(SB), Y15
	VMOVDQU bit4<>(SB), Y8
	TESTQ   CX, CX
	JE      q5kdone

q5kloop:
	KPROLOGUE
	VPXOR       Y9, Y9, Y9
	VMOVDQU     16(SI), Y14
	Q5KQUANTS(0, VPSLLW, 4, VPSLLW, 3)
	KGROUP(0)
	Q5KQUANTS(1, VPSLLW, 2, VPSLLW, 1)
	KGROUP(1)
	Q5KQUANTS(2, VPSLLW, 0, VPSRLW, 1)
	KGROUP(2)
	Q5KQUANTS(3, VPSRLW, 2, VPSRLW, 3)
	KGROUP(3)
	VCVTDQ2PS   Y9, Y9
	VFMADD231PS Y3, Y9, Y0
	ADDQ        $176, SI
	ADDQ        $292, DI
	DECQ        CX
	JNZ         q5kloop

q5kdone:
	HSUM8(Y0, X0, X2)
	VPERMILPS  $0x4e, X1, X2
	VADDPS     X2, X1, X1
	VPERMILPS  $0xb1, X1, X2
	VADDPS     X2, X1, X1
	VSUBSS     X1, X0, X0
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// Q6KCHUNK multiplies 32 unsigned 6-bit quants (low bits already in L, the
// two high bits at bits 4–5 of H after masking) by activations at yoff and
// by the scales of their two 16-element groups (int16 at soff(SP)).
#define Q6KCHUNK(L, H, yoff, soff) \
	VPAND        Y14, H, H          \
	VPOR         H, L, L            \
	VPMADDUBSW   yoff(DI), L, L     \
	VPBROADCASTD soff(SP), Y7       \
	VPSHUFB      Y13, Y7, Y7        \
	VPMADDWD     Y7, L, L           \
	VPADDD       L, Y9, Y9

// Q6KHALF handles the 128 quants of half h: ql bytes 64h..64h+63 hold the
// low four bits of four 32-element chunks, qh bytes 32h..32h+31 their top
// two bits at bit pairs 0, 2, 4 and 6.
#define Q6KHALF(h) \
	VMOVDQU (64*h)(SI), Y10          \
	VMOVDQU (64*h+32)(SI), Y11       \
	VMOVDQU (128+32*h)(SI), Y12      \
	VPAND   Y15, Y10, Y4             \
	VPSLLW  $4, Y12, Y5              \
	Q6KCHUNK(Y4, Y5, 4+128*h, 16*h)  \
	VPAND   Y15, Y11, Y4             \
	VPSLLW  $2, Y12, Y5              \
	Q6KCHUNK(Y4, Y5, 36+128*h, 16*h+4) \
	VPSRLW  $4, Y10, Y4              \
	VPAND   Y15, Y4, Y4              \
	VMOVDQU Y12, Y5                  \
	Q6KCHUNK(Y4, Y5, 68+128*h, 16*h+8) \
	VPSRLW  $4, Y11, Y4              \
	VPAND   Y15, Y4, Y4              \
	VPSRLW  $2, Y12, Y5              \
	Q6KCHUNK(Y4, Y5, 100+128*h, 16*h+12)

// func vecDotQ6_KAVX2(row, act []byte, n int) float32
TEXT ·vecDotQ6_KAVX2(SB), NOSPLIT, $32-60
	MOVQ    row_base+0(FP), SI
	MOVQ    act_base+24(FP), DI
	MOVQ    n+48(FP), CX
	SHRQ    $8, CX
	VXORPS  Y0, Y0, Y0
	VMOVDQU nib<>(SB), Y15
	VMOVDQU bits45<>(SB), Y14
	VMOVDQU pairspread<>(SB), Y13
	TESTQ   CX, CX
	JE      q6kdone

	// The quants stay unsigned (q = a+32), so Σ sc·y·a is
	// Σ sc·y·q − 32·Σ sc·bsum, with bsum the 16-element activation sums.
q6kloop:
	MOVWLZX      208(SI), AX
	VMOVD        AX, X2
	VCVTPH2PS    X2, X2
	VMULSS       (DI), X2, X2
	VBROADCASTSS X2, Y3
	VPMOVSXBW    192(SI), Y5
	VMOVDQU      Y5, (SP)
	VPMADDWD     260(DI), Y5, Y6
	VPSLLD       $5, Y6, Y6
	VPXOR        Y9, Y9, Y9
	VPSUBD       Y6, Y9, Y9
	Q6KHALF(0)
	Q6KHALF(1)
	VCVTDQ2PS    Y9, Y9
	VFMADD231PS  Y3, Y9, Y0
	ADDQ         $210, SI
	ADDQ         $292, DI
	DECQ         CX
	JNZ          q6kloop

q6kdone:
	HSUM8(Y0, X0, X1)
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// Q8BLOCKVNNI adds a block as Q8INT computes it, the two multiply-add
// steps fused into one VPDPBUSD (AVX512_VNNI on ymm registers, EVEX
// encoded), same exactness, without the VPHADDD fold: its own order, which
// the AVX-512 table's own tiles follow.
#define Q8BLOCKVNNI(xo, yo, ACC) \
	Q8BLOCKSCALE(xo, yo)          \
	VMOVDQU     (xo+2)(SI), Y4    \
	VMOVDQU     (yo+2)(DI), Y5    \
	VPSIGNB     Y4, Y4, Y6        \
	VPSIGNB     Y4, Y5, Y5        \
	VPXOR       Y7, Y7, Y7        \
	VPDPBUSD    Y5, Y6, Y7        \
	VCVTDQ2PS   Y7, Y7            \
	VFMADD231PS Y2, Y7, ACC

// func vecDotQ8_0VNNI(row, act []byte, n int) float32
TEXT ·vecDotQ8_0VNNI(SB), NOSPLIT, $0-60
	MOVQ   row_base+0(FP), SI
	MOVQ   act_base+24(FP), DI
	MOVQ   n+48(FP), CX
	SHRQ   $5, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ   CX, DX
	SHRQ   $1, DX
	JE     q8vone

q8vpair:
	Q8BLOCKVNNI(0, 0, Y0)
	Q8BLOCKVNNI(34, 34, Y1)
	ADDQ $68, SI
	ADDQ $68, DI
	DECQ DX
	JNZ  q8vpair

q8vone:
	TESTQ $1, CX
	JE    q8vdone
	Q8BLOCKVNNI(0, 0, Y0)

q8vdone:
	VADDPS     Y1, Y0, Y0
	HSUM8(Y0, X0, X1)
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// Lane indices spreading lane 0 of a register over the low eight lanes of
// a zmm and lane 2 over the high eight: the scales of a block pair.
DATA q8pairidx<>+0(SB)/8, $0
DATA q8pairidx<>+8(SB)/8, $0
DATA q8pairidx<>+16(SB)/8, $0
DATA q8pairidx<>+24(SB)/8, $0
DATA q8pairidx<>+32(SB)/8, $0x0000000200000002
DATA q8pairidx<>+40(SB)/8, $0x0000000200000002
DATA q8pairidx<>+48(SB)/8, $0x0000000200000002
DATA q8pairidx<>+56(SB)/8, $0x0000000200000002
GLOBL q8pairidx<>(SB), RODATA|NOPTR, $64

// Q8PAIRZ adds the Q8_0 block pair at SI, DI to Z0: the first block's
// Q8BLOCKVNNI steps in the low eight lanes (vecDotQ8_0VNNI's Y0) and the
// second's in the high eight (its Y1), the same operations lane for lane.
// AVX-512 has no VPSIGNB, so the weights' signs move onto the activations
// by a masked negation instead; where a weight is 0 its |x| is 0 as well,
// so the integer sums are VPSIGNB's. Z14 holds q8pairidx; AX, BX, K1 and
// Z2–Z7 are scratch.
#define Q8PAIRZ \
	MOVWLZX      (SI), AX        \
	MOVWLZX      (DI), BX        \
	VMOVD        AX, X2          \
	VPINSRW      $1, BX, X2, X2  \
	MOVWLZX      34(SI), AX      \
	MOVWLZX      34(DI), BX      \
	VPINSRW      $2, AX, X2, X2  \
	VPINSRW      $3, BX, X2, X2  \
	VCVTPH2PS    X2, X2          \
	VMOVSHDUP    X2, X3          \
	VMULPS       X3, X2, X2      \
	VPERMPS      Z2, Z14, Z2     \
	VMOVDQU      2(SI), Y4       \
	VINSERTI64X4 $1, 36(SI), Z4, Z4 \
	VMOVDQU      2(DI), Y5       \
	VINSERTI64X4 $1, 36(DI), Z5, Z5 \
	VPABSB       Z4, Z6          \
	VPMOVB2M     Z4, K1          \
	VPXORD       Z7, Z7, Z7      \
	VPSUBB       Z5, Z7, K1, Z5  \
	VPDPBUSD     Z5, Z6, Z7      \
	VCVTDQ2PS    Z7, Z7          \
	VFMADD231PS  Z2, Z7, Z0

// func vecDotQ8_0RowsVNNI(rows *byte, rowStride, nrows int, act *byte, n int, out *float32)
//
// out[r] = vecDotQ8_0VNNI(row r, act, n) for r < nrows, rows rowStride
// bytes apart, bit for bit: block pairs on zmm registers (Q8PAIRZ), an odd
// last block on the one-row kernel's steps, then its reduction; the row
// stream is prefetched 4 KiB ahead (see vecDotF16RowsAVX512).
TEXT ·vecDotQ8_0RowsVNNI(SB), NOSPLIT, $0-48
	MOVQ      rows+0(FP), R8
	MOVQ      nrows+16(FP), R9
	MOVQ      act+24(FP), R10
	TESTQ     R9, R9
	JE        q8rdone
	VMOVDQU64 q8pairidx<>(SB), Z14

q8rrow:
	MOVQ   R8, SI
	MOVQ   R10, DI
	MOVQ   n+32(FP), CX
	SHRQ   $5, CX
	VPXORD Z0, Z0, Z0
	MOVQ   CX, DX
	SHRQ   $1, DX
	JE     q8rone

q8rpair:
	PREFETCHT0 4096(SI)
	Q8PAIRZ
	ADDQ $68, SI
	ADDQ $68, DI
	DECQ DX
	JNZ  q8rpair

q8rone:
	VEXTRACTF64X4 $1, Z0, Y1
	TESTQ         $1, CX
	JE            q8rout
	Q8BLOCKVNNI(0, 0, Y0)

q8rout:
	VADDPS Y1, Y0, Y0
	HSUM8(Y0, X0, X1)
	ROWNEXT(R8, R9, q8rrow)

q8rdone:
	VZEROUPPER
	RET

// Q40BLOCKVNNI is Q8BLOCKVNNI for Q4_0 (as Q40INT), with VPDPBUSD for Σq·y
// and Σ8·y.
#define Q40BLOCKVNNI(xo, yo, ACC) \
	Q8BLOCKSCALE(xo, yo)          \
	VMOVDQU     (xo+2)(SI), X4    \
	VPSRLW      $4, X4, X5        \
	VINSERTI128 $1, X5, Y4, Y4    \
	VPAND       Y14, Y4, Y4       \
	VMOVDQU     (yo+2)(DI), Y5    \
	VPXOR       Y6, Y6, Y6        \
	VPXOR       Y7, Y7, Y7        \
	VPDPBUSD    Y5, Y4, Y6        \
	VPDPBUSD    Y5, Y13, Y7       \
	VPSUBD      Y7, Y6, Y6        \
	VCVTDQ2PS   Y6, Y6            \
	VFMADD231PS Y2, Y6, ACC

// func vecDotQ4_0VNNI(row, act []byte, n int) float32
TEXT ·vecDotQ4_0VNNI(SB), NOSPLIT, $0-60
	MOVQ    row_base+0(FP), SI
	MOVQ    act_base+24(FP), DI
	MOVQ    n+48(FP), CX
	SHRQ    $5, CX
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VMOVDQU nib<>(SB), Y14
	VMOVDQU eights<>(SB), Y13
	MOVQ    CX, DX
	SHRQ    $1, DX
	JE      q40vone

q40vpair:
	Q40BLOCKVNNI(0, 0, Y0)
	Q40BLOCKVNNI(18, 34, Y1)
	ADDQ $36, SI
	ADDQ $68, DI
	DECQ DX
	JNZ  q40vpair

q40vone:
	TESTQ $1, CX
	JE    q40vdone
	Q40BLOCKVNNI(0, 0, Y0)

q40vdone:
	VADDPS     Y1, Y0, Y0
	HSUM8(Y0, X0, X1)
	VMOVSS     X0, ret+56(FP)
	VZEROUPPER
	RET

// HFDOT leaves in X0 the dot product of the CX fp16 values at SI with the
// floats at DI (dotF16F32AVX2's steps); it advances SI and DI, ends with
// CX = 0 and jumps to hfdone when done. Y1–Y7 and AX are scratch.
#define HFDOT \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
hfloop32: CMPQ        CX, $32 \
	JL          hfloop8 \
	VCVTPH2PS   (SI), Y4 \
	VCVTPH2PS   16(SI), Y5 \
	VCVTPH2PS   32(SI), Y6 \
	VCVTPH2PS   48(SI), Y7 \
	VFMADD231PS (DI), Y4, Y0 \
	VFMADD231PS 32(DI), Y5, Y1 \
	VFMADD231PS 64(DI), Y6, Y2 \
	VFMADD231PS 96(DI), Y7, Y3 \
	ADDQ        $64, SI \
	ADDQ        $128, DI \
	SUBQ        $32, CX \
	JMP         hfloop32 \
hfloop8: CMPQ        CX, $8 \
	JL          hfreduce \
	VCVTPH2PS   (SI), Y4 \
	VFMADD231PS (DI), Y4, Y0 \
	ADDQ        $16, SI \
	ADDQ        $32, DI \
	SUBQ        $8, CX \
	JMP         hfloop8 \
hfreduce: VADDPS Y1, Y0, Y0 \
	VADDPS Y3, Y2, Y2 \
	VADDPS Y2, Y0, Y0 \
	HSUM8(Y0, X0, X1) \
hftail: TESTQ       CX, CX \
	JE          hfdone \
	MOVWLZX     (SI), AX \
	VMOVD       AX, X4 \
	VCVTPH2PS   X4, X4 \
	VFMADD231SS (DI), X4, X0 \
	ADDQ        $2, SI \
	ADDQ        $4, DI \
	DECQ        CX \
	JMP         hftail

// func dotF16F32AVX2(row []byte, x []float32) float32
//
// dotF32 for an F16 row against float activations (the attention's values
// against its softmax weights): the row converted eight at a time, four
// accumulators, reduced as HSUM8 does, then the tail one by one.
TEXT ·dotF16F32AVX2(SB), NOSPLIT, $0-52
	MOVQ   row_base+0(FP), SI
	MOVQ   x_base+24(FP), DI
	MOVQ   x_len+32(FP), CX
	HFDOT

hfdone:
	VMOVSS     X0, ret+48(FP)
	VZEROUPPER
	RET

