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
