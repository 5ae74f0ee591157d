//go:build amd64 && !purego

#include "textflag.h"

// quantQ8_0ActAVX2 is quantQ8_0Act (quant_act.go) on AVX2 and F16C, bit for
// bit: the same float32 amax, amax/127 and 127/amax, the scale rounded to
// fp16 half to even by VCVTPS2PH, and each x·id rounded half to even by
// VROUNDPS. It is the loop llama.cpp's x86 quantize_row_q8_0 runs, one
// 32-value block per iteration.

DATA q8c<>+0(SB)/4, $127.0
DATA q8c<>+4(SB)/4, $0x7fffffff
GLOBL q8c<>(SB), RODATA|NOPTR, $8

// After VPACKSSDW and VPACKSSWB, which work within 128-bit lanes, the
// dwords of a block's bytes sit in the order 0 2 4 6 1 3 5 7 (counting
// groups of four values); VPERMD with these indices puts them back.
DATA q8perm<>+0(SB)/4, $0
DATA q8perm<>+4(SB)/4, $4
DATA q8perm<>+8(SB)/4, $1
DATA q8perm<>+12(SB)/4, $5
DATA q8perm<>+16(SB)/4, $2
DATA q8perm<>+20(SB)/4, $6
DATA q8perm<>+24(SB)/4, $3
DATA q8perm<>+28(SB)/4, $7
GLOBL q8perm<>(SB), RODATA|NOPTR, $32

// func quantQ8_0ActAVX2(x *float32, dst *byte, nb int)
TEXT ·quantQ8_0ActAVX2(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), SI
	MOVQ         dst+8(FP), DI
	MOVQ         nb+16(FP), CX
	TESTQ        CX, CX
	JE           q8done
	VBROADCASTSS q8c<>+4(SB), Y15 // |x| mask
	VMOVSS       q8c<>+0(SB), X14 // 127
	VMOVDQU      q8perm<>(SB), Y13
	VXORPS       X12, X12, X12

q8loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3

	// amax = max |x| over the block.
	VANDPS       Y15, Y0, Y4
	VANDPS       Y15, Y1, Y5
	VMAXPS       Y5, Y4, Y4
	VANDPS       Y15, Y2, Y5
	VMAXPS       Y5, Y4, Y4
	VANDPS       Y15, Y3, Y5
	VMAXPS       Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS       X5, X4, X4
	VPERMILPS    $0x4e, X4, X5
	VMAXPS       X5, X4, X4
	VPERMILPS    $0xb1, X4, X5
	VMAXSS       X5, X4, X4

	// d = amax/127 as fp16; id = 127/amax, or 0 when amax is 0.
	VDIVSS    X14, X4, X5
	VCVTPS2PH $0, X5, X5
	VMOVD     X5, AX
	MOVW      AX, (DI)
	VDIVSS    X4, X14, X6
	VCMPSS    $4, X12, X4, X7 // amax != 0
	VANDPS    X7, X6, X6
	VBROADCASTSS X6, Y6

	VMULPS    Y6, Y0, Y0
	VMULPS    Y6, Y1, Y1
	VMULPS    Y6, Y2, Y2
	VMULPS    Y6, Y3, Y3
	VROUNDPS  $0, Y0, Y0
	VROUNDPS  $0, Y1, Y1
	VROUNDPS  $0, Y2, Y2
	VROUNDPS  $0, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD    Y0, Y13, Y0
	VMOVDQU   Y0, 2(DI)

	ADDQ $128, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q8loop

q8done:
	VZEROUPPER
	RET

DATA q8kc<>+0(SB)/4, $-127.0
DATA q8kc<>+4(SB)/4, $1.0
DATA q8kc<>+8(SB)/4, $127
GLOBL q8kc<>(SB), RODATA|NOPTR, $12

// HSUMD8 leaves the sum of the eight int32 lanes of Y in lane 0 of X (the
// same register); T is scratch.
#define HSUMD8(Y, X, T) \
	VEXTRACTI128 $1, Y, T    \
	VPADDD       T, X, X     \
	VPSHUFD      $0x4e, X, T \
	VPADDD       T, X, X     \
	VPSHUFD      $0xb1, X, T \
	VPADDD       T, X, X

// func quantQ8_KAVX2(x *float32, dst *byte, nb int)
//
// quantQ8_K (quant_k.go) on AVX2, bit for bit: the signed value of largest
// magnitude (the first one on ties, found by comparing every |x| with the
// maximum), iscale = −127/max, quants rounded half to even (nearestInt's
// rounding) and capped at 127, d = 1/iscale, and the sums of each 16 quants.
TEXT ·quantQ8_KAVX2(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), SI
	MOVQ         dst+8(FP), DI
	MOVQ         nb+16(FP), CX
	TESTQ        CX, CX
	JE           q8kdone
	VBROADCASTSS q8c<>+4(SB), Y15 // |x| mask
	VMOVDQU      q8perm<>(SB), Y13
	VPBROADCASTD q8kc<>+8(SB), Y12

q8kblock:
	// amax = max |x| over the 256 values.
	VANDPS (SI), Y15, Y0
	VANDPS 32(SI), Y15, Y1
	VANDPS 64(SI), Y15, Y2
	VANDPS 96(SI), Y15, Y3
	LEAQ   128(SI), R8
	MOVQ   $7, DX

q8kmax:
	VANDPS (R8), Y15, Y4
	VMAXPS Y4, Y0, Y0
	VANDPS 32(R8), Y15, Y4
	VMAXPS Y4, Y1, Y1
	VANDPS 64(R8), Y15, Y4
	VMAXPS Y4, Y2, Y2
	VANDPS 96(R8), Y15, Y4
	VMAXPS Y4, Y3, Y3
	ADDQ   $128, R8
	DECQ   DX
	JNZ    q8kmax
	VMAXPS       Y1, Y0, Y0
	VMAXPS       Y3, Y2, Y2
	VMAXPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXSS       X1, X0, X0
	VXORPS       X1, X1, X1
	VUCOMISS     X1, X0
	JE           q8kzero

	// max = the first x with |x| = amax.
	VBROADCASTSS X0, Y1
	MOVQ         SI, R8

q8kfind:
	VANDPS    (R8), Y15, Y2
	VCMPPS    $0, Y1, Y2, Y2
	VMOVMSKPS Y2, AX
	TESTL     AX, AX
	JNZ       q8kfound
	ADDQ      $32, R8
	JMP       q8kfind

q8kfound:
	BSFL         AX, AX
	VMOVSS       (R8)(AX*4), X2
	VMOVSS       q8kc<>+0(SB), X3
	VDIVSS       X2, X3, X3 // iscale = −127/max
	VMOVSS       q8kc<>+4(SB), X4
	VDIVSS       X3, X4, X4 // d = 1/iscale
	VMOVSS       X4, (DI)
	VBROADCASTSS X3, Y3
	MOVQ         SI, R8
	LEAQ         4(DI), R10
	LEAQ         260(DI), R11
	MOVQ         $8, DX

q8kquant:
	VMULPS    (R8), Y3, Y4
	VMULPS    32(R8), Y3, Y5
	VMULPS    64(R8), Y3, Y6
	VMULPS    96(R8), Y3, Y7
	VROUNDPS  $0, Y4, Y4
	VROUNDPS  $0, Y5, Y5
	VROUNDPS  $0, Y6, Y6
	VROUNDPS  $0, Y7, Y7
	VCVTPS2DQ Y4, Y4
	VCVTPS2DQ Y5, Y5
	VCVTPS2DQ Y6, Y6
	VCVTPS2DQ Y7, Y7
	VPMINSD   Y12, Y4, Y4
	VPMINSD   Y12, Y5, Y5
	VPMINSD   Y12, Y6, Y6
	VPMINSD   Y12, Y7, Y7
	VPADDD    Y5, Y4, Y8
	HSUMD8(Y8, X8, X10)
	VMOVD     X8, AX
	MOVW      AX, (R11)
	VPADDD    Y7, Y6, Y9
	HSUMD8(Y9, X9, X10)
	VMOVD     X9, AX
	MOVW      AX, 2(R11)
	VPACKSSDW Y5, Y4, Y4
	VPACKSSDW Y7, Y6, Y6
	VPACKSSWB Y6, Y4, Y4
	VPERMD    Y4, Y13, Y4
	VMOVDQU   Y4, (R10)
	ADDQ      $128, R8
	ADDQ      $32, R10
	ADDQ      $4, R11
	DECQ      DX
	JNZ       q8kquant
	JMP       q8knext

q8kzero:
	VPXOR   Y0, Y0, Y0
	MOVQ    DI, R8
	MOVQ    $9, DX

q8kclear:
	VMOVDQU Y0, (R8)
	ADDQ    $32, R8
	DECQ    DX
	JNZ     q8kclear
	MOVL    $0, (R8)

q8knext:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q8kblock

q8kdone:
	VZEROUPPER
	RET

// func quantF16AVX2(x *float32, dst *byte, n int)
//
// quantF16 (quant.go) over n values, n a multiple of 16, on F16C: VCVTPS2PH
// rounds half to even as F32ToF16 does, and agrees with it bit for bit on
// every input but NaN (it keeps a NaN's payload; F32ToF16 returns the
// canonical quiet NaN).
TEXT ·quantF16AVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JE   f16qdone

f16qloop:
	VMOVUPS   (SI), Y0
	VMOVUPS   32(SI), Y1
	VCVTPS2PH $0, Y0, (DI)
	VCVTPS2PH $0, Y1, 16(DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       f16qloop

f16qdone:
	VZEROUPPER
	RET
