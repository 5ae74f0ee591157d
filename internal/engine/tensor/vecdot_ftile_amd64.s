//go:build amd64 && !purego

#include "textflag.h"

// F32 and F16 tiles on AVX-512F: four weight rows against three activation
// rows, each pair bit for bit the one-row AVX2 kernel (vecdot_amd64.s).
//
// The one-row kernels keep four 8-lane accumulators: accumulator j sums
// elements 32i+8j..32i+8j+7 of every whole 32-element chunk i, then
// accumulator 0 takes the remaining 8-element steps, then the sum
// ((acc0+acc1)+(acc2+acc3)) is reduced across lanes (HSUM8) and the last
// n mod 8 products are added one by one. A 16-lane register holds two of
// those accumulators side by side (acc0|acc1 and acc2|acc3): each lane sees
// the same fused multiply-adds in the same order, so the sums are the same
// bits. The 8-element steps add to the low half only (mask K1), and the
// reduction splits the halves back into the one-row kernel's registers.
//
// Registers: Z0–Z3 the rows' 16 elements, Z4–Z6 the activations', Z8–Z31
// the accumulators of pair (a, r): Z(8+2(4a+r)) for acc0|acc1 and the next
// one for acc2|acc3. AX is the byte offset into every row.

// HSUM8 leaves the sum of the eight float lanes of Y in lane 0 of X (the
// same register); T is scratch. As in vecdot_amd64.s.
#define HSUM8(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPS       T, X, X  \
	VPERMILPS    $0x4e, X, T \
	VADDPS       T, X, X  \
	VPERMILPS    $0xb1, X, T \
	VADDPS       T, X, X

// func vecDotF32Tile43AVX512(rows *byte, rowStride int, acts *byte, actStride int, n int, out *float32, outStride int)
TEXT ·vecDotF32Tile43AVX512(SB), NOSPLIT, $0-56
	MOVQ rows+0(FP), SI
	MOVQ rowStride+8(FP), R8
	MOVQ acts+16(FP), DI
	MOVQ actStride+24(FP), BX
	MOVQ n+32(FP), CX
	LEAQ (SI)(R8*1), R9
	LEAQ (R9)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (DI)(BX*1), R12
	LEAQ (R12)(BX*1), R13
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31
	XORQ AX, AX
	MOVQ CX, DX
	SHRQ $5, DX
	JZ   vecDotF32Tile43AVX512_steps8

vecDotF32Tile43AVX512_loop32:
	VMOVUPS 0(SI)(AX*1), Z0
	VMOVUPS 0(R9)(AX*1), Z1
	VMOVUPS 0(R10)(AX*1), Z2
	VMOVUPS 0(R11)(AX*1), Z3
	VMOVUPS 0(DI)(AX*1), Z4
	VMOVUPS 0(R12)(AX*1), Z5
	VMOVUPS 0(R13)(AX*1), Z6
	VFMADD231PS Z4, Z0, Z8
	VFMADD231PS Z4, Z1, Z10
	VFMADD231PS Z4, Z2, Z12
	VFMADD231PS Z4, Z3, Z14
	VFMADD231PS Z5, Z0, Z16
	VFMADD231PS Z5, Z1, Z18
	VFMADD231PS Z5, Z2, Z20
	VFMADD231PS Z5, Z3, Z22
	VFMADD231PS Z6, Z0, Z24
	VFMADD231PS Z6, Z1, Z26
	VFMADD231PS Z6, Z2, Z28
	VFMADD231PS Z6, Z3, Z30
	VMOVUPS 64(SI)(AX*1), Z0
	VMOVUPS 64(R9)(AX*1), Z1
	VMOVUPS 64(R10)(AX*1), Z2
	VMOVUPS 64(R11)(AX*1), Z3
	VMOVUPS 64(DI)(AX*1), Z4
	VMOVUPS 64(R12)(AX*1), Z5
	VMOVUPS 64(R13)(AX*1), Z6
	VFMADD231PS Z4, Z0, Z9
	VFMADD231PS Z4, Z1, Z11
	VFMADD231PS Z4, Z2, Z13
	VFMADD231PS Z4, Z3, Z15
	VFMADD231PS Z5, Z0, Z17
	VFMADD231PS Z5, Z1, Z19
	VFMADD231PS Z5, Z2, Z21
	VFMADD231PS Z5, Z3, Z23
	VFMADD231PS Z6, Z0, Z25
	VFMADD231PS Z6, Z1, Z27
	VFMADD231PS Z6, Z2, Z29
	VFMADD231PS Z6, Z3, Z31
	ADDQ $128, AX
	DECQ DX
	JNZ  vecDotF32Tile43AVX512_loop32

vecDotF32Tile43AVX512_steps8:
	MOVQ CX, DX
	SHRQ $3, DX
	ANDQ $3, DX
	JZ   vecDotF32Tile43AVX512_reduce
	MOVL $0xff, R8
	KMOVW R8, K1

vecDotF32Tile43AVX512_loop8:
	VMOVUPS (SI)(AX*1), Y0
	VMOVUPS (R9)(AX*1), Y1
	VMOVUPS (R10)(AX*1), Y2
	VMOVUPS (R11)(AX*1), Y3
	VMOVUPS (DI)(AX*1), Y4
	VMOVUPS (R12)(AX*1), Y5
	VMOVUPS (R13)(AX*1), Y6
	VFMADD231PS Z4, Z0, K1, Z8
	VFMADD231PS Z4, Z1, K1, Z10
	VFMADD231PS Z4, Z2, K1, Z12
	VFMADD231PS Z4, Z3, K1, Z14
	VFMADD231PS Z5, Z0, K1, Z16
	VFMADD231PS Z5, Z1, K1, Z18
	VFMADD231PS Z5, Z2, K1, Z20
	VFMADD231PS Z5, Z3, K1, Z22
	VFMADD231PS Z6, Z0, K1, Z24
	VFMADD231PS Z6, Z1, K1, Z26
	VFMADD231PS Z6, Z2, K1, Z28
	VFMADD231PS Z6, Z3, K1, Z30
	ADDQ $32, AX
	DECQ DX
	JNZ  vecDotF32Tile43AVX512_loop8

vecDotF32Tile43AVX512_reduce:
	ANDQ $7, CX
	LEAQ (AX)(CX*4), CX
	MOVQ out+40(FP), BX
	MOVQ outStride+48(FP), DX
	SHLQ $2, DX
	VEXTRACTF64X4 $1, Z8, Y1
	VMOVAPS       Y8, Y0
	VEXTRACTF64X4 $1, Z9, Y3
	VMOVAPS       Y9, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF32Tile43AVX512_tail00:
	CMPQ          R8, CX
	JGE           vecDotF32Tile43AVX512_tail00done
	VMOVSS      (SI)(R8*1), X4
	VFMADD231SS (DI)(R8*1), X4, X0
	ADDQ          $4, R8
	JMP           vecDotF32Tile43AVX512_tail00
vecDotF32Tile43AVX512_tail00done:
	VMOVSS        X0, 0(BX)
	VEXTRACTF64X4 $1, Z10, Y1
	VMOVAPS       Y10, Y0
	VEXTRACTF64X4 $1, Z11, Y3
	VMOVAPS       Y11, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF32Tile43AVX512_tail01:
	CMPQ          R8, CX
	JGE           vecDotF32Tile43AVX512_tail01done
	VMOVSS      (R9)(R8*1), X4
	VFMADD231SS (DI)(R8*1), X4, X0
	ADDQ          $4, R8
	JMP           vecDotF32Tile43AVX512_tail01
vecDotF32Tile43AVX512_tail01done:
	VMOVSS        X0, 4(BX)
	VEXTRACTF64X4 $1, Z12, Y1
	VMOVAPS       Y12, Y0
	VEXTRACTF64X4 $1, Z13, Y3
	VMOVAPS       Y13, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF32Tile43AVX512_tail02:
	CMPQ          R8, CX
	JGE           vecDotF32Tile43AVX512_tail02done
	VMOVSS      (R10)(R8*1), X4
	VFMADD231SS (DI)(R8*1), X4, X0
	ADDQ          $4, R8
	JMP           vecDotF32Tile43AVX512_tail02
vecDotF32Tile43AVX512_tail02done:
	VMOVSS        X0, 8(BX)
	VEXTRACTF64X4 $1, Z14, Y1
	VMOVAPS       Y14, Y0
	VEXTRACTF64X4 $1, Z15, Y3
	VMOVAPS       Y15, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF32Tile43AVX512_tail03:
	CMPQ          R8, CX
	JGE           vecDotF32Tile43AVX512_tail03done
	VMOVSS      (R11)(R8*1), X4
	VFMADD231SS (DI)(R8*1), X4, X0
	ADDQ          $4, R8
	JMP           vecDotF32Tile43AVX512_tail03
vecDotF32Tile43AVX512_tail03done:
	VMOVSS        X0, 12(BX)
	ADDQ DX, BX
	VEXTRACTF64X4 $1, Z16, Y1
	VMOVAPS       Y16, Y0
	VEXTRACTF64X4 $1, Z17, Y3
	VMOVAPS       Y17, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF32Tile43AVX512_tail10:
	CMPQ          R8, CX
	JGE           vecDotF32Tile43AVX512_tail10done
	VMOVSS      (SI)(R8*1), X4
	VFMADD231SS (R12)(R8*1), X4, X0
	ADDQ          $4, R8
	JMP           vecDotF32Tile43AVX512_tail10
vecDotF32Tile43AVX512_tail10done:
	VMOVSS        X0, 0(BX)
	VEXTRACTF64X4 $1, Z18, Y1
	VMOVAPS       Y18, Y0
	VEXTRACTF64X4 $1, Z19, Y3
	VMOVAPS       Y19, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF32Tile43AVX512_tail11:
	CMPQ          R8, CX
	JGE           vecDotF32Tile43AVX512_tail11done
	VMOVSS      (R9)(R8*1), X4
	VFMADD231SS (R12)(R8*1), X4, X0
	ADDQ          $4, R8
	JMP           vecDotF32Tile43AVX512_tail11
vecDotF32Tile43AVX512_tail11done:
	VMOVSS        X0, 4(BX)
	VEXTRACTF64X4 $1, Z20, Y1
	VMOVAPS       Y20, Y0
	VEXTRACTF64X4 $1, Z21, Y3
	VMOVAPS       Y21, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF32Tile43AVX512_tail12:
	CMPQ          R8, CX
	JGE           vecDotF32Tile43AVX512_tail12done
	VMOVSS      (R10)(R8*1), X4
	VFMADD231SS (R12)(R8*1), X4, X0
	ADDQ          $4, R8
	JMP           vecDotF32Tile43AVX512_tail12
vecDotF32Tile43AVX512_tail12done:
	VMOVSS        X0, 8(BX)
	VEXTRACTF64X4 $1, Z22, Y1
	VMOVAPS       Y22, Y0
	VEXTRACTF64X4 $1, Z23, Y3
	VMOVAPS       Y23, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF32Tile43AVX512_tail13:
	CMPQ          R8, CX
	JGE           vecDotF32Tile43AVX512_tail13done
	VMOVSS      (R11)(R8*1), X4
	VFMADD231SS (R12)(R8*1), X4, X0
	ADDQ          $4, R8
	JMP           vecDotF32Tile43AVX512_tail13
vecDotF32Tile43AVX512_tail13done:
	VMOVSS        X0, 12(BX)
	ADDQ DX, BX
	VEXTRACTF64X4 $1, Z24, Y1
	VMOVAPS       Y24, Y0
	VEXTRACTF64X4 $1, Z25, Y3
	VMOVAPS       Y25, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF32Tile43AVX512_tail20:
	CMPQ          R8, CX
	JGE           vecDotF32Tile43AVX512_tail20done
	VMOVSS      (SI)(R8*1), X4
	VFMADD231SS (R13)(R8*1), X4, X0
	ADDQ          $4, R8
	JMP           vecDotF32Tile43AVX512_tail20
vecDotF32Tile43AVX512_tail20done:
	VMOVSS        X0, 0(BX)
	VEXTRACTF64X4 $1, Z26, Y1
	VMOVAPS       Y26, Y0
	VEXTRACTF64X4 $1, Z27, Y3
	VMOVAPS       Y27, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF32Tile43AVX512_tail21:
	CMPQ          R8, CX
	JGE           vecDotF32Tile43AVX512_tail21done
	VMOVSS      (R9)(R8*1), X4
	VFMADD231SS (R13)(R8*1), X4, X0
	ADDQ          $4, R8
	JMP           vecDotF32Tile43AVX512_tail21
vecDotF32Tile43AVX512_tail21done:
	VMOVSS        X0, 4(BX)
	VEXTRACTF64X4 $1, Z28, Y1
	VMOVAPS       Y28, Y0
	VEXTRACTF64X4 $1, Z29, Y3
	VMOVAPS       Y29, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF32Tile43AVX512_tail22:
	CMPQ          R8, CX
	JGE           vecDotF32Tile43AVX512_tail22done
	VMOVSS      (R10)(R8*1), X4
	VFMADD231SS (R13)(R8*1), X4, X0
	ADDQ          $4, R8
	JMP           vecDotF32Tile43AVX512_tail22
vecDotF32Tile43AVX512_tail22done:
	VMOVSS        X0, 8(BX)
	VEXTRACTF64X4 $1, Z30, Y1
	VMOVAPS       Y30, Y0
	VEXTRACTF64X4 $1, Z31, Y3
	VMOVAPS       Y31, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF32Tile43AVX512_tail23:
	CMPQ          R8, CX
	JGE           vecDotF32Tile43AVX512_tail23done
	VMOVSS      (R11)(R8*1), X4
	VFMADD231SS (R13)(R8*1), X4, X0
	ADDQ          $4, R8
	JMP           vecDotF32Tile43AVX512_tail23
vecDotF32Tile43AVX512_tail23done:
	VMOVSS        X0, 12(BX)
	VZEROUPPER
	RET

// func vecDotF16Tile43AVX512(rows *byte, rowStride int, acts *byte, actStride int, n int, out *float32, outStride int)
TEXT ·vecDotF16Tile43AVX512(SB), NOSPLIT, $0-56
	MOVQ rows+0(FP), SI
	MOVQ rowStride+8(FP), R8
	MOVQ acts+16(FP), DI
	MOVQ actStride+24(FP), BX
	MOVQ n+32(FP), CX
	LEAQ (SI)(R8*1), R9
	LEAQ (R9)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (DI)(BX*1), R12
	LEAQ (R12)(BX*1), R13
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31
	XORQ AX, AX
	MOVQ CX, DX
	SHRQ $5, DX
	JZ   vecDotF16Tile43AVX512_steps8

vecDotF16Tile43AVX512_loop32:
	VCVTPH2PS 0(SI)(AX*1), Z0
	VCVTPH2PS 0(R9)(AX*1), Z1
	VCVTPH2PS 0(R10)(AX*1), Z2
	VCVTPH2PS 0(R11)(AX*1), Z3
	VCVTPH2PS 0(DI)(AX*1), Z4
	VCVTPH2PS 0(R12)(AX*1), Z5
	VCVTPH2PS 0(R13)(AX*1), Z6
	VFMADD231PS Z4, Z0, Z8
	VFMADD231PS Z4, Z1, Z10
	VFMADD231PS Z4, Z2, Z12
	VFMADD231PS Z4, Z3, Z14
	VFMADD231PS Z5, Z0, Z16
	VFMADD231PS Z5, Z1, Z18
	VFMADD231PS Z5, Z2, Z20
	VFMADD231PS Z5, Z3, Z22
	VFMADD231PS Z6, Z0, Z24
	VFMADD231PS Z6, Z1, Z26
	VFMADD231PS Z6, Z2, Z28
	VFMADD231PS Z6, Z3, Z30
	VCVTPH2PS 32(SI)(AX*1), Z0
	VCVTPH2PS 32(R9)(AX*1), Z1
	VCVTPH2PS 32(R10)(AX*1), Z2
	VCVTPH2PS 32(R11)(AX*1), Z3
	VCVTPH2PS 32(DI)(AX*1), Z4
	VCVTPH2PS 32(R12)(AX*1), Z5
	VCVTPH2PS 32(R13)(AX*1), Z6
	VFMADD231PS Z4, Z0, Z9
	VFMADD231PS Z4, Z1, Z11
	VFMADD231PS Z4, Z2, Z13
	VFMADD231PS Z4, Z3, Z15
	VFMADD231PS Z5, Z0, Z17
	VFMADD231PS Z5, Z1, Z19
	VFMADD231PS Z5, Z2, Z21
	VFMADD231PS Z5, Z3, Z23
	VFMADD231PS Z6, Z0, Z25
	VFMADD231PS Z6, Z1, Z27
	VFMADD231PS Z6, Z2, Z29
	VFMADD231PS Z6, Z3, Z31
	ADDQ $64, AX
	DECQ DX
	JNZ  vecDotF16Tile43AVX512_loop32

vecDotF16Tile43AVX512_steps8:
	MOVQ CX, DX
	SHRQ $3, DX
	ANDQ $3, DX
	JZ   vecDotF16Tile43AVX512_reduce
	MOVL $0xff, R8
	KMOVW R8, K1

vecDotF16Tile43AVX512_loop8:
	VCVTPH2PS (SI)(AX*1), Y0
	VCVTPH2PS (R9)(AX*1), Y1
	VCVTPH2PS (R10)(AX*1), Y2
	VCVTPH2PS (R11)(AX*1), Y3
	VCVTPH2PS (DI)(AX*1), Y4
	VCVTPH2PS (R12)(AX*1), Y5
	VCVTPH2PS (R13)(AX*1), Y6
	VFMADD231PS Z4, Z0, K1, Z8
	VFMADD231PS Z4, Z1, K1, Z10
	VFMADD231PS Z4, Z2, K1, Z12
	VFMADD231PS Z4, Z3, K1, Z14
	VFMADD231PS Z5, Z0, K1, Z16
	VFMADD231PS Z5, Z1, K1, Z18
	VFMADD231PS Z5, Z2, K1, Z20
	VFMADD231PS Z5, Z3, K1, Z22
	VFMADD231PS Z6, Z0, K1, Z24
	VFMADD231PS Z6, Z1, K1, Z26
	VFMADD231PS Z6, Z2, K1, Z28
	VFMADD231PS Z6, Z3, K1, Z30
	ADDQ $16, AX
	DECQ DX
	JNZ  vecDotF16Tile43AVX512_loop8

vecDotF16Tile43AVX512_reduce:
	ANDQ $7, CX
	LEAQ (AX)(CX*2), CX
	MOVQ out+40(FP), BX
	MOVQ outStride+48(FP), DX
	SHLQ $2, DX
	VEXTRACTF64X4 $1, Z8, Y1
	VMOVAPS       Y8, Y0
	VEXTRACTF64X4 $1, Z9, Y3
	VMOVAPS       Y9, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF16Tile43AVX512_tail00:
	CMPQ          R8, CX
	JGE           vecDotF16Tile43AVX512_tail00done
	VPINSRW     $0, (SI)(R8*1), X4, X4
	VPINSRW     $0, (DI)(R8*1), X5, X5
	VCVTPH2PS   X4, X4
	VCVTPH2PS   X5, X5
	VFMADD231SS X5, X4, X0
	ADDQ          $2, R8
	JMP           vecDotF16Tile43AVX512_tail00
vecDotF16Tile43AVX512_tail00done:
	VMOVSS        X0, 0(BX)
	VEXTRACTF64X4 $1, Z10, Y1
	VMOVAPS       Y10, Y0
	VEXTRACTF64X4 $1, Z11, Y3
	VMOVAPS       Y11, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF16Tile43AVX512_tail01:
	CMPQ          R8, CX
	JGE           vecDotF16Tile43AVX512_tail01done
	VPINSRW     $0, (R9)(R8*1), X4, X4
	VPINSRW     $0, (DI)(R8*1), X5, X5
	VCVTPH2PS   X4, X4
	VCVTPH2PS   X5, X5
	VFMADD231SS X5, X4, X0
	ADDQ          $2, R8
	JMP           vecDotF16Tile43AVX512_tail01
vecDotF16Tile43AVX512_tail01done:
	VMOVSS        X0, 4(BX)
	VEXTRACTF64X4 $1, Z12, Y1
	VMOVAPS       Y12, Y0
	VEXTRACTF64X4 $1, Z13, Y3
	VMOVAPS       Y13, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF16Tile43AVX512_tail02:
	CMPQ          R8, CX
	JGE           vecDotF16Tile43AVX512_tail02done
	VPINSRW     $0, (R10)(R8*1), X4, X4
	VPINSRW     $0, (DI)(R8*1), X5, X5
	VCVTPH2PS   X4, X4
	VCVTPH2PS   X5, X5
	VFMADD231SS X5, X4, X0
	ADDQ          $2, R8
	JMP           vecDotF16Tile43AVX512_tail02
vecDotF16Tile43AVX512_tail02done:
	VMOVSS        X0, 8(BX)
	VEXTRACTF64X4 $1, Z14, Y1
	VMOVAPS       Y14, Y0
	VEXTRACTF64X4 $1, Z15, Y3
	VMOVAPS       Y15, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF16Tile43AVX512_tail03:
	CMPQ          R8, CX
	JGE           vecDotF16Tile43AVX512_tail03done
	VPINSRW     $0, (R11)(R8*1), X4, X4
	VPINSRW     $0, (DI)(R8*1), X5, X5
	VCVTPH2PS   X4, X4
	VCVTPH2PS   X5, X5
	VFMADD231SS X5, X4, X0
	ADDQ          $2, R8
	JMP           vecDotF16Tile43AVX512_tail03
vecDotF16Tile43AVX512_tail03done:
	VMOVSS        X0, 12(BX)
	ADDQ DX, BX
	VEXTRACTF64X4 $1, Z16, Y1
	VMOVAPS       Y16, Y0
	VEXTRACTF64X4 $1, Z17, Y3
	VMOVAPS       Y17, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF16Tile43AVX512_tail10:
	CMPQ          R8, CX
	JGE           vecDotF16Tile43AVX512_tail10done
	VPINSRW     $0, (SI)(R8*1), X4, X4
	VPINSRW     $0, (R12)(R8*1), X5, X5
	VCVTPH2PS   X4, X4
	VCVTPH2PS   X5, X5
	VFMADD231SS X5, X4, X0
	ADDQ          $2, R8
	JMP           vecDotF16Tile43AVX512_tail10
vecDotF16Tile43AVX512_tail10done:
	VMOVSS        X0, 0(BX)
	VEXTRACTF64X4 $1, Z18, Y1
	VMOVAPS       Y18, Y0
	VEXTRACTF64X4 $1, Z19, Y3
	VMOVAPS       Y19, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF16Tile43AVX512_tail11:
	CMPQ          R8, CX
	JGE           vecDotF16Tile43AVX512_tail11done
	VPINSRW     $0, (R9)(R8*1), X4, X4
	VPINSRW     $0, (R12)(R8*1), X5, X5
	VCVTPH2PS   X4, X4
	VCVTPH2PS   X5, X5
	VFMADD231SS X5, X4, X0
	ADDQ          $2, R8
	JMP           vecDotF16Tile43AVX512_tail11
vecDotF16Tile43AVX512_tail11done:
	VMOVSS        X0, 4(BX)
	VEXTRACTF64X4 $1, Z20, Y1
	VMOVAPS       Y20, Y0
	VEXTRACTF64X4 $1, Z21, Y3
	VMOVAPS       Y21, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF16Tile43AVX512_tail12:
	CMPQ          R8, CX
	JGE           vecDotF16Tile43AVX512_tail12done
	VPINSRW     $0, (R10)(R8*1), X4, X4
	VPINSRW     $0, (R12)(R8*1), X5, X5
	VCVTPH2PS   X4, X4
	VCVTPH2PS   X5, X5
	VFMADD231SS X5, X4, X0
	ADDQ          $2, R8
	JMP           vecDotF16Tile43AVX512_tail12
vecDotF16Tile43AVX512_tail12done:
	VMOVSS        X0, 8(BX)
	VEXTRACTF64X4 $1, Z22, Y1
	VMOVAPS       Y22, Y0
	VEXTRACTF64X4 $1, Z23, Y3
	VMOVAPS       Y23, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF16Tile43AVX512_tail13:
	CMPQ          R8, CX
	JGE           vecDotF16Tile43AVX512_tail13done
	VPINSRW     $0, (R11)(R8*1), X4, X4
	VPINSRW     $0, (R12)(R8*1), X5, X5
	VCVTPH2PS   X4, X4
	VCVTPH2PS   X5, X5
	VFMADD231SS X5, X4, X0
	ADDQ          $2, R8
	JMP           vecDotF16Tile43AVX512_tail13
vecDotF16Tile43AVX512_tail13done:
	VMOVSS        X0, 12(BX)
	ADDQ DX, BX
	VEXTRACTF64X4 $1, Z24, Y1
	VMOVAPS       Y24, Y0
	VEXTRACTF64X4 $1, Z25, Y3
	VMOVAPS       Y25, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF16Tile43AVX512_tail20:
	CMPQ          R8, CX
	JGE           vecDotF16Tile43AVX512_tail20done
	VPINSRW     $0, (SI)(R8*1), X4, X4
	VPINSRW     $0, (R13)(R8*1), X5, X5
	VCVTPH2PS   X4, X4
	VCVTPH2PS   X5, X5
	VFMADD231SS X5, X4, X0
	ADDQ          $2, R8
	JMP           vecDotF16Tile43AVX512_tail20
vecDotF16Tile43AVX512_tail20done:
	VMOVSS        X0, 0(BX)
	VEXTRACTF64X4 $1, Z26, Y1
	VMOVAPS       Y26, Y0
	VEXTRACTF64X4 $1, Z27, Y3
	VMOVAPS       Y27, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF16Tile43AVX512_tail21:
	CMPQ          R8, CX
	JGE           vecDotF16Tile43AVX512_tail21done
	VPINSRW     $0, (R9)(R8*1), X4, X4
	VPINSRW     $0, (R13)(R8*1), X5, X5
	VCVTPH2PS   X4, X4
	VCVTPH2PS   X5, X5
	VFMADD231SS X5, X4, X0
	ADDQ          $2, R8
	JMP           vecDotF16Tile43AVX512_tail21
vecDotF16Tile43AVX512_tail21done:
	VMOVSS        X0, 4(BX)
	VEXTRACTF64X4 $1, Z28, Y1
	VMOVAPS       Y28, Y0
	VEXTRACTF64X4 $1, Z29, Y3
	VMOVAPS       Y29, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF16Tile43AVX512_tail22:
	CMPQ          R8, CX
	JGE           vecDotF16Tile43AVX512_tail22done
	VPINSRW     $0, (R10)(R8*1), X4, X4
	VPINSRW     $0, (R13)(R8*1), X5, X5
	VCVTPH2PS   X4, X4
	VCVTPH2PS   X5, X5
	VFMADD231SS X5, X4, X0
	ADDQ          $2, R8
	JMP           vecDotF16Tile43AVX512_tail22
vecDotF16Tile43AVX512_tail22done:
	VMOVSS        X0, 8(BX)
	VEXTRACTF64X4 $1, Z30, Y1
	VMOVAPS       Y30, Y0
	VEXTRACTF64X4 $1, Z31, Y3
	VMOVAPS       Y31, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
vecDotF16Tile43AVX512_tail23:
	CMPQ          R8, CX
	JGE           vecDotF16Tile43AVX512_tail23done
	VPINSRW     $0, (R11)(R8*1), X4, X4
	VPINSRW     $0, (R13)(R8*1), X5, X5
	VCVTPH2PS   X4, X4
	VCVTPH2PS   X5, X5
	VFMADD231SS X5, X4, X0
	ADDQ          $2, R8
	JMP           vecDotF16Tile43AVX512_tail23
vecDotF16Tile43AVX512_tail23done:
	VMOVSS        X0, 12(BX)
	VZEROUPPER
	RET
