//go:build arm64 && !purego

#include "textflag.h"

// NEON dot products (vecdot.go's generic functions, the same exact
// integer sums per block, the float accumulation spread over vector lanes).
// Go's assembler lacks most NEON arithmetic, so those instructions are
// spelled as WORDs with the instruction in the comment. The callers have
// checked the sizes: row and act hold exactly n elements of their types.

// func vecDotF32NEON(row, act []byte, n int) float32
TEXT ·vecDotF32NEON(SB), NOSPLIT, $0-60
	MOVD row_base+0(FP), R0
	MOVD act_base+24(FP), R1
	MOVD n+48(FP), R2
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16

f32loop16:
	CMP    $16, R2
	BLT    f32loop4
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R1), [V16.S4, V17.S4, V18.S4, V19.S4]
	VFMLA  V16.S4, V4.S4, V0.S4
	VFMLA  V17.S4, V5.S4, V1.S4
	VFMLA  V18.S4, V6.S4, V2.S4
	VFMLA  V19.S4, V7.S4, V3.S4
	SUB    $16, R2
	B      f32loop16

f32loop4:
	CMP    $4, R2
	BLT    f32reduce
	VLD1.P 16(R0), [V4.S4]
	VLD1.P 16(R1), [V16.S4]
	VFMLA  V16.S4, V4.S4, V0.S4
	SUB    $4, R2
	B      f32loop4

f32reduce:
	WORD $0x4e21d400 // fadd v0.4s, v0.4s, v1.4s
	WORD $0x4e23d442 // fadd v2.4s, v2.4s, v3.4s
	WORD $0x4e22d400 // fadd v0.4s, v0.4s, v2.4s
	WORD $0x6e20d400 // faddp v0.4s, v0.4s, v0.4s
	WORD $0x7e30d800 // faddp s0, v0.2s

f32tail:
	CBZ     R2, f32done
	FMOVS.P 4(R0), F4
	FMOVS.P 4(R1), F5
	FMADDS  F4, F0, F5, F0
	SUB     $1, R2
	B       f32tail

f32done:
	FMOVS F0, ret+56(FP)
	RET

// func vecDotF16NEON(row, act []byte, n int) float32
TEXT ·vecDotF16NEON(SB), NOSPLIT, $0-60
	MOVD row_base+0(FP), R0
	MOVD act_base+24(FP), R1
	MOVD n+48(FP), R2
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16

f16loop16:
	CMP    $16, R2
	BLT    f16loop4
	VLD1.P 32(R0), [V4.H8, V5.H8]
	VLD1.P 32(R1), [V6.H8, V7.H8]
	WORD $0x0e217890 // fcvtl v16.4s, v4.4h
	WORD $0x4e217891 // fcvtl2 v17.4s, v4.8h
	WORD $0x0e2178b2 // fcvtl v18.4s, v5.4h
	WORD $0x4e2178b3 // fcvtl2 v19.4s, v5.8h
	WORD $0x0e2178d4 // fcvtl v20.4s, v6.4h
	WORD $0x4e2178d5 // fcvtl2 v21.4s, v6.8h
	WORD $0x0e2178f6 // fcvtl v22.4s, v7.4h
	WORD $0x4e2178f7 // fcvtl2 v23.4s, v7.8h
	VFMLA  V20.S4, V16.S4, V0.S4
	VFMLA  V21.S4, V17.S4, V1.S4
	VFMLA  V22.S4, V18.S4, V2.S4
	VFMLA  V23.S4, V19.S4, V3.S4
	SUB    $16, R2
	B      f16loop16

f16loop4:
	CMP    $4, R2
	BLT    f16reduce
	VLD1.P 8(R0), [V4.H4]
	VLD1.P 8(R1), [V6.H4]
	WORD $0x0e217890 // fcvtl v16.4s, v4.4h
	WORD $0x0e2178d4 // fcvtl v20.4s, v6.4h
	VFMLA  V20.S4, V16.S4, V0.S4
	SUB    $4, R2
	B      f16loop4

f16reduce:
	WORD $0x4e21d400 // fadd v0.4s, v0.4s, v1.4s
	WORD $0x4e23d442 // fadd v2.4s, v2.4s, v3.4s
	WORD $0x4e22d400 // fadd v0.4s, v0.4s, v2.4s
	WORD $0x6e20d400 // faddp v0.4s, v0.4s, v0.4s
	WORD $0x7e30d800 // faddp s0, v0.2s

f16tail:
	CBZ     R2, f16done
	MOVHU.P 2(R0), R3
	MOVHU.P 2(R1), R4
	FMOVS   R3, F4
	FMOVS   R4, F5
	WORD $0x1ee24084 // fcvt s4, h4
	WORD $0x1ee240a5 // fcvt s5, h5
	FMADDS  F4, F0, F5, F0
	SUB     $1, R2
	B       f16tail

f16done:
	FMOVS F0, ret+56(FP)
	RET

// func vecDotBF16NEON(row, act []byte, n int) float32
//
// vecDotF16NEON for bfloat16: widening is a 16-bit left shift (SHLL).
TEXT ·vecDotBF16NEON(SB), NOSPLIT, $0-60
	MOVD row_base+0(FP), R0
	MOVD act_base+24(FP), R1
	MOVD n+48(FP), R2
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16

bf16loop16:
	CMP    $16, R2
	BLT    bf16loop4
	VLD1.P 32(R0), [V4.H8, V5.H8]
	VLD1.P 32(R1), [V6.H8, V7.H8]
	WORD $0x2e613890 // shll v16.4s, v4.4h, #16
	WORD $0x6e613891 // shll2 v17.4s, v4.8h, #16
	WORD $0x2e6138b2 // shll v18.4s, v5.4h, #16
	WORD $0x6e6138b3 // shll2 v19.4s, v5.8h, #16
	WORD $0x2e6138d4 // shll v20.4s, v6.4h, #16
	WORD $0x6e6138d5 // shll2 v21.4s, v6.8h, #16
	WORD $0x2e6138f6 // shll v22.4s, v7.4h, #16
	WORD $0x6e6138f7 // shll2 v23.4s, v7.8h, #16
	VFMLA  V20.S4, V16.S4, V0.S4
	VFMLA  V21.S4, V17.S4, V1.S4
	VFMLA  V22.S4, V18.S4, V2.S4
	VFMLA  V23.S4, V19.S4, V3.S4
	SUB    $16, R2
	B      bf16loop16

bf16loop4:
	CMP    $4, R2
	BLT    bf16reduce
	VLD1.P 8(R0), [V4.H4]
	VLD1.P 8(R1), [V6.H4]
	WORD $0x2e613890 // shll v16.4s, v4.4h, #16
	WORD $0x2e6138d4 // shll v20.4s, v6.4h, #16
	VFMLA  V20.S4, V16.S4, V0.S4
	SUB    $4, R2
	B      bf16loop4

bf16reduce:
	WORD $0x4e21d400 // fadd v0.4s, v0.4s, v1.4s
	WORD $0x4e23d442 // fadd v2.4s, v2.4s, v3.4s
	WORD $0x4e22d400 // fadd v0.4s, v0.4s, v2.4s
	WORD $0x6e20d400 // faddp v0.4s, v0.4s, v0.4s
	WORD $0x7e30d800 // faddp s0, v0.2s

bf16tail:
	CBZ     R2, bf16done
	MOVHU.P 2(R0), R3
	MOVHU.P 2(R1), R4
	LSLW    $16, R3, R3
	LSLW    $16, R4, R4
	FMOVS   R3, F4
	FMOVS   R4, F5
	FMADDS  F4, F0, F5, F0
	SUB     $1, R2
	B       bf16tail

bf16done:
	FMOVS F0, ret+56(FP)
	RET


// func vecDotQ8_0NEON(row, act []byte, n int) float32
//
// Two blocks per step, into V0 and V8, summed at the end.
TEXT ·vecDotQ8_0NEON(SB), NOSPLIT, $0-60
	MOVD row_base+0(FP), R0
	MOVD act_base+24(FP), R1
	MOVD n+48(FP), R2
	LSR  $5, R2
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V8.B16, V8.B16, V8.B16

q8loop2:
	CMP    $2, R2
	BLT    q8one
	MOVHU  (R0), R3
	MOVHU  (R1), R4
	MOVHU  34(R0), R5
	MOVHU  34(R1), R6
	FMOVS  R3, F5
	FMOVS  R4, F6
	FMOVS  R5, F9
	FMOVS  R6, F10
	WORD $0x1ee240a5 // fcvt s5, h5
	WORD $0x1ee240c6 // fcvt s6, h6
	WORD $0x1ee24129 // fcvt s9, h9
	WORD $0x1ee2414a // fcvt s10, h10
	FMULS  F5, F6, F7
	FMULS  F9, F10, F11
	ADD    $2, R0, R3
	ADD    $2, R1, R4
	VLD1   (R3), [V1.B16, V2.B16]
	VLD1   (R4), [V3.B16, V4.B16]
	ADD    $36, R0, R3
	ADD    $36, R1, R4
	VLD1   (R3), [V17.B16, V18.B16]
	VLD1   (R4), [V19.B16, V20.B16]
	VEOR   V16.B16, V16.B16, V16.B16
	VEOR   V21.B16, V21.B16, V21.B16
	WORD $0x4e839430 // sdot v16.4s, v1.16b, v3.16b
	WORD $0x4e939635 // sdot v21.4s, v17.16b, v19.16b
	WORD $0x4e849450 // sdot v16.4s, v2.16b, v4.16b
	WORD $0x4e949655 // sdot v21.4s, v18.16b, v20.16b
	WORD $0x4e21da10 // scvtf v16.4s, v16.4s
	WORD $0x4e21dab5 // scvtf v21.4s, v21.4s
	WORD $0x4f871200 // fmla v0.4s, v16.4s, v7.s[0]
	WORD $0x4f8b12a8 // fmla v8.4s, v21.4s, v11.s[0]
	ADD    $68, R0
	ADD    $68, R1
	SUB    $2, R2
	B      q8loop2

q8one:
	CBZ    R2, q8reduce
	MOVHU  (R0), R3
	MOVHU  (R1), R4
	FMOVS  R3, F5
	FMOVS  R4, F6
	WORD $0x1ee240a5 // fcvt s5, h5
	WORD $0x1ee240c6 // fcvt s6, h6
	FMULS  F5, F6, F7
	ADD    $2, R0, R3
	ADD    $2, R1, R4
	VLD1   (R3), [V1.B16, V2.B16]
	VLD1   (R4), [V3.B16, V4.B16]
	VEOR   V16.B16, V16.B16, V16.B16
	WORD $0x4e839430 // sdot v16.4s, v1.16b, v3.16b
	WORD $0x4e849450 // sdot v16.4s, v2.16b, v4.16b
	WORD $0x4e21da10 // scvtf v16.4s, v16.4s
	WORD $0x4f871200 // fmla v0.4s, v16.4s, v7.s[0]

q8reduce:
	WORD $0x4e28d400 // fadd v0.4s, v0.4s, v8.4s
	WORD $0x6e20d400 // faddp v0.4s, v0.4s, v0.4s
	WORD $0x7e30d800 // faddp s0, v0.2s
	FMOVS F0, ret+56(FP)
	RET

// func vecDotQ4_0NEON(row, act []byte, n int) float32
//
// Q4_0 weights (fp16 d, 16 bytes of nibbles: low nibbles the first 16
// values, high the last 16, each minus 8) against Q8_0 activations.
TEXT ·vecDotQ4_0NEON(SB), NOSPLIT, $0-60
	MOVD  row_base+0(FP), R0
	MOVD  act_base+24(FP), R1
	MOVD  n+48(FP), R2
	LSR   $5, R2
	VEOR  V0.B16, V0.B16, V0.B16
	VMOVI $15, V30.B16
	VMOVI $8, V31.B16
	CBZ   R2, q40done

q40loop:
	MOVHU (R0), R3
	MOVHU (R1), R4
	FMOVS R3, F5
	FMOVS R4, F6
	WORD $0x1ee240a5 // fcvt s5, h5
	WORD $0x1ee240c6 // fcvt s6, h6
	FMULS F5, F6, F7
	ADD   $2, R0, R3
	ADD   $2, R1, R4
	VLD1  (R3), [V1.B16]
	VLD1  (R4), [V3.B16, V4.B16]
	VAND  V30.B16, V1.B16, V2.B16
	VUSHR $4, V1.B16, V1.B16
	VSUB  V31.B16, V2.B16, V2.B16
	VSUB  V31.B16, V1.B16, V1.B16
	VEOR  V16.B16, V16.B16, V16.B16
	WORD $0x4e839450 // sdot v16.4s, v2.16b, v3.16b
	WORD $0x4e849430 // sdot v16.4s, v1.16b, v4.16b
	WORD $0x4e21da10 // scvtf v16.4s, v16.4s
	WORD $0x4f871200 // fmla v0.4s, v16.4s, v7.s[0]
	ADD   $18, R0
	ADD   $34, R1
	SUB   $1, R2
	CBNZ  R2, q40loop

q40done:
	WORD $0x6e20d400 // faddp v0.4s, v0.4s, v0.4s
	WORD $0x7e30d800 // faddp s0, v0.2s
	FMOVS F0, ret+56(FP)
	RET

// func vecDotQ4_KNEON(row, act []byte, n int) float32
//
// Per 256-value block: the 6-bit scales and mins unpacked in general
// registers (as ggml's get_scale_min_k4), the eight sub-block sums Σq·y by
// SDOT (low nibbles of each 32 bytes are one sub-block, high nibbles the
// next), reduced to one lane each by ADDP and multiplied by their scales;
// the mins times the activation's pair sums of bsums; then
// d·y.d·Σ − dmin·y.d·Σmins in two float accumulators (F0 and F25: F1–F23
// alias the vector registers the block steps use).
TEXT ·vecDotQ4_KNEON(SB), NOSPLIT, $0-60
	MOVD  row_base+0(FP), R0
	MOVD  act_base+24(FP), R1
	MOVD  n+48(FP), R2
	LSR   $8, R2
	FMOVS ZR, F0
	FMOVS ZR, F25
	VMOVI $15, V30.B16
	CBZ   R2, q4kdone

q4kloop:
	MOVWU 4(R0), R3
	MOVWU 8(R0), R4
	MOVWU 12(R0), R5
	ANDW  $0x3f3f3f3f, R3, R6
	ANDW  $0x3f3f3f3f, R4, R7
	ANDW  $0x0f0f0f0f, R5, R8
	LSRW  $6, R3, R9
	ANDW  $0x03030303, R9, R9
	ORRW  R9<<4, R8, R8
	LSRW  $4, R5, R9
	ANDW  $0x0f0f0f0f, R9, R9
	LSRW  $6, R4, R10
	ANDW  $0x03030303, R10, R10
	ORRW  R10<<4, R9, R9
	ORR   R8<<32, R6, R10 // the eight scales
	ORR   R9<<32, R7, R11 // the eight mins

	ADD    $16, R0, R12
	ADD    $4, R1, R13
	VEOR   V8.B16, V8.B16, V8.B16
	VEOR   V9.B16, V9.B16, V9.B16
	VEOR   V10.B16, V10.B16, V10.B16
	VEOR   V11.B16, V11.B16, V11.B16
	VEOR   V12.B16, V12.B16, V12.B16
	VEOR   V13.B16, V13.B16, V13.B16
	VEOR   V14.B16, V14.B16, V14.B16
	VEOR   V15.B16, V15.B16, V15.B16

	VLD1.P 32(R12), [V1.B16, V2.B16]
	VLD1.P 64(R13), [V16.B16, V17.B16, V18.B16, V19.B16]
	VAND   V30.B16, V1.B16, V3.B16
	VAND   V30.B16, V2.B16, V4.B16
	VUSHR  $4, V1.B16, V5.B16
	VUSHR  $4, V2.B16, V6.B16
	WORD $0x4e909468 // sdot v8.4s, v3.16b, v16.16b
	WORD $0x4e919488 // sdot v8.4s, v4.16b, v17.16b
	WORD $0x4e9294a9 // sdot v9.4s, v5.16b, v18.16b
	WORD $0x4e9394c9 // sdot v9.4s, v6.16b, v19.16b

	VLD1.P 32(R12), [V1.B16, V2.B16]
	VLD1.P 64(R13), [V16.B16, V17.B16, V18.B16, V19.B16]
	VAND   V30.B16, V1.B16, V3.B16
	VAND   V30.B16, V2.B16, V4.B16
	VUSHR  $4, V1.B16, V5.B16
	VUSHR  $4, V2.B16, V6.B16
	WORD $0x4e90946a // sdot v10.4s, v3.16b, v16.16b
	WORD $0x4e91948a // sdot v10.4s, v4.16b, v17.16b
	WORD $0x4e9294ab // sdot v11.4s, v5.16b, v18.16b
	WORD $0x4e9394cb // sdot v11.4s, v6.16b, v19.16b

	VLD1.P 32(R12), [V1.B16, V2.B16]
	VLD1.P 64(R13), [V16.B16, V17.B16, V18.B16, V19.B16]
	VAND   V30.B16, V1.B16, V3.B16
	VAND   V30.B16, V2.B16, V4.B16
	VUSHR  $4, V1.B16, V5.B16
	VUSHR  $4, V2.B16, V6.B16
	WORD $0x4e90946c // sdot v12.4s, v3.16b, v16.16b
	WORD $0x4e91948c // sdot v12.4s, v4.16b, v17.16b
	WORD $0x4e9294ad // sdot v13.4s, v5.16b, v18.16b
	WORD $0x4e9394cd // sdot v13.4s, v6.16b, v19.16b

	VLD1.P 32(R12), [V1.B16, V2.B16]
	VLD1.P 64(R13), [V16.B16, V17.B16, V18.B16, V19.B16]
	VAND   V30.B16, V1.B16, V3.B16
	VAND   V30.B16, V2.B16, V4.B16
	VUSHR  $4, V1.B16, V5.B16
	VUSHR  $4, V2.B16, V6.B16
	WORD $0x4e90946e // sdot v14.4s, v3.16b, v16.16b
	WORD $0x4e91948e // sdot v14.4s, v4.16b, v17.16b
	WORD $0x4e9294af // sdot v15.4s, v5.16b, v18.16b
	WORD $0x4e9394cf // sdot v15.4s, v6.16b, v19.16b

	// [Σ0 Σ1 Σ2 Σ3] and [Σ4 … Σ7], times the scales.
	WORD $0x4ea9bd08 // addp v8.4s, v8.4s, v9.4s
	WORD $0x4eabbd4a // addp v10.4s, v10.4s, v11.4s
	WORD $0x4eaabd08 // addp v8.4s, v8.4s, v10.4s
	WORD $0x4eadbd8c // addp v12.4s, v12.4s, v13.4s
	WORD $0x4eafbdce // addp v14.4s, v14.4s, v15.4s
	WORD $0x4eaebd8c // addp v12.4s, v12.4s, v14.4s
	FMOVD  R10, F27
	VUXTL  V27.B8, V27.H8
	VUXTL  V27.H4, V28.S4
	VUXTL2 V27.H8, V29.S4
	WORD $0x4ebc9d18 // mul v24.4s, v8.4s, v28.4s
	WORD $0x4ebd9598 // mla v24.4s, v12.4s, v29.4s
	WORD $0x4eb1bb18 // addv s24, v24.4s
	WORD $0x5e21db18 // scvtf s24, s24

	// Σ mins · (bsums[2j] + bsums[2j+1]).
	VLD1   (R13), [V20.H8, V21.H8]
	WORD $0x4e75be94 // addp v20.8h, v20.8h, v21.8h
	FMOVD  R11, F22
	VUXTL  V22.B8, V22.H8
	WORD $0x0e76c297 // smull v23.4s, v20.4h, v22.4h
	WORD $0x4e768297 // smlal2 v23.4s, v20.8h, v22.8h
	WORD $0x4eb1baf7 // addv s23, v23.4s
	WORD $0x5e21daf7 // scvtf s23, s23

	MOVHU  (R0), R3
	MOVHU  2(R0), R4
	FMOVS  R3, F2
	FMOVS  R4, F3
	WORD $0x1ee24042 // fcvt s2, h2
	WORD $0x1ee24063 // fcvt s3, h3
	FMOVS  (R1), F4
	FMULS  F4, F2, F2
	FMULS  F4, F3, F3
	FMADDS F2, F0, F24, F0
	FMADDS F3, F25, F23, F25
	ADD    $144, R0
	ADD    $292, R1
	SUB    $1, R2
	CBNZ   R2, q4kloop

q4kdone:
	FSUBS F25, F0, F0
	FMOVS F0, ret+56(FP)
	RET

// func vecDotQ5_KNEON(row, act []byte, n int) float32
//
// vecDotQ4_KNEON for Q5_K (d, dmin, 12 scale bytes, 32 qh bytes, 128 qs
// bytes): each quant gains its fifth bit from qh, bit 2g for the low
// nibbles of group g and 2g+1 for the high ones, moved to bit 4.
TEXT ·vecDotQ5_KNEON(SB), NOSPLIT, $0-60
	MOVD  row_base+0(FP), R0
	MOVD  act_base+24(FP), R1
	MOVD  n+48(FP), R2
	LSR   $8, R2
	FMOVS ZR, F0
	FMOVS ZR, F25
	VMOVI $15, V30.B16
	VMOVI $16, V31.B16
	CBZ   R2, q5kdone

q5kloop:
	MOVWU 4(R0), R3
	MOVWU 8(R0), R4
	MOVWU 12(R0), R5
	ANDW  $0x3f3f3f3f, R3, R6
	ANDW  $0x3f3f3f3f, R4, R7
	ANDW  $0x0f0f0f0f, R5, R8
	LSRW  $6, R3, R9
	ANDW  $0x03030303, R9, R9
	ORRW  R9<<4, R8, R8
	LSRW  $4, R5, R9
	ANDW  $0x0f0f0f0f, R9, R9
	LSRW  $6, R4, R10
	ANDW  $0x03030303, R10, R10
	ORRW  R10<<4, R9, R9
	ORR   R8<<32, R6, R10 // the eight scales
	ORR   R9<<32, R7, R11 // the eight mins

	ADD    $48, R0, R12
	ADD    $16, R0, R3
	VLD1   (R3), [V26.B16, V27.B16]
	ADD    $4, R1, R13
	VEOR   V8.B16, V8.B16, V8.B16
	VEOR   V9.B16, V9.B16, V9.B16
	VEOR   V10.B16, V10.B16, V10.B16
	VEOR   V11.B16, V11.B16, V11.B16
	VEOR   V12.B16, V12.B16, V12.B16
	VEOR   V13.B16, V13.B16, V13.B16
	VEOR   V14.B16, V14.B16, V14.B16
	VEOR   V15.B16, V15.B16, V15.B16

	VLD1.P 32(R12), [V1.B16, V2.B16]
	VLD1.P 64(R13), [V16.B16, V17.B16, V18.B16, V19.B16]
	VAND   V30.B16, V1.B16, V3.B16
	VAND   V30.B16, V2.B16, V4.B16
	VUSHR  $4, V1.B16, V5.B16
	VUSHR  $4, V2.B16, V6.B16
	VSHL   $4, V26.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V3.B16, V3.B16
	VSHL   $4, V27.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V4.B16, V4.B16
	VSHL   $3, V26.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V5.B16, V5.B16
	VSHL   $3, V27.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V6.B16, V6.B16
	WORD $0x4e909468 // sdot v8.4s, v3.16b, v16.16b
	WORD $0x4e919488 // sdot v8.4s, v4.16b, v17.16b
	WORD $0x4e9294a9 // sdot v9.4s, v5.16b, v18.16b
	WORD $0x4e9394c9 // sdot v9.4s, v6.16b, v19.16b

	VLD1.P 32(R12), [V1.B16, V2.B16]
	VLD1.P 64(R13), [V16.B16, V17.B16, V18.B16, V19.B16]
	VAND   V30.B16, V1.B16, V3.B16
	VAND   V30.B16, V2.B16, V4.B16
	VUSHR  $4, V1.B16, V5.B16
	VUSHR  $4, V2.B16, V6.B16
	VSHL   $2, V26.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V3.B16, V3.B16
	VSHL   $2, V27.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V4.B16, V4.B16
	VSHL   $1, V26.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V5.B16, V5.B16
	VSHL   $1, V27.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V6.B16, V6.B16
	WORD $0x4e90946a // sdot v10.4s, v3.16b, v16.16b
	WORD $0x4e91948a // sdot v10.4s, v4.16b, v17.16b
	WORD $0x4e9294ab // sdot v11.4s, v5.16b, v18.16b
	WORD $0x4e9394cb // sdot v11.4s, v6.16b, v19.16b

	VLD1.P 32(R12), [V1.B16, V2.B16]
	VLD1.P 64(R13), [V16.B16, V17.B16, V18.B16, V19.B16]
	VAND   V30.B16, V1.B16, V3.B16
	VAND   V30.B16, V2.B16, V4.B16
	VUSHR  $4, V1.B16, V5.B16
	VUSHR  $4, V2.B16, V6.B16
	VAND   V31.B16, V26.B16, V7.B16
	VORR   V7.B16, V3.B16, V3.B16
	VAND   V31.B16, V27.B16, V7.B16
	VORR   V7.B16, V4.B16, V4.B16
	VUSHR  $1, V26.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V5.B16, V5.B16
	VUSHR  $1, V27.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V6.B16, V6.B16
	WORD $0x4e90946c // sdot v12.4s, v3.16b, v16.16b
	WORD $0x4e91948c // sdot v12.4s, v4.16b, v17.16b
	WORD $0x4e9294ad // sdot v13.4s, v5.16b, v18.16b
	WORD $0x4e9394cd // sdot v13.4s, v6.16b, v19.16b

	VLD1.P 32(R12), [V1.B16, V2.B16]
	VLD1.P 64(R13), [V16.B16, V17.B16, V18.B16, V19.B16]
	VAND   V30.B16, V1.B16, V3.B16
	VAND   V30.B16, V2.B16, V4.B16
	VUSHR  $4, V1.B16, V5.B16
	VUSHR  $4, V2.B16, V6.B16
	VUSHR  $2, V26.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V3.B16, V3.B16
	VUSHR  $2, V27.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V4.B16, V4.B16
	VUSHR  $3, V26.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V5.B16, V5.B16
	VUSHR  $3, V27.B16, V7.B16
	VAND   V31.B16, V7.B16, V7.B16
	VORR   V7.B16, V6.B16, V6.B16
	WORD $0x4e90946e // sdot v14.4s, v3.16b, v16.16b
	WORD $0x4e91948e // sdot v14.4s, v4.16b, v17.16b
	WORD $0x4e9294af // sdot v15.4s, v5.16b, v18.16b
	WORD $0x4e9394cf // sdot v15.4s, v6.16b, v19.16b

	// [Σ0 Σ1 Σ2 Σ3] and [Σ4 … Σ7], times the scales.
	WORD $0x4ea9bd08 // addp v8.4s, v8.4s, v9.4s
	WORD $0x4eabbd4a // addp v10.4s, v10.4s, v11.4s
	WORD $0x4eaabd08 // addp v8.4s, v8.4s, v10.4s
	WORD $0x4eadbd8c // addp v12.4s, v12.4s, v13.4s
	WORD $0x4eafbdce // addp v14.4s, v14.4s, v15.4s
	WORD $0x4eaebd8c // addp v12.4s, v12.4s, v14.4s
	FMOVD  R10, F27
	VUXTL  V27.B8, V27.H8
	VUXTL  V27.H4, V28.S4
	VUXTL2 V27.H8, V29.S4
	WORD $0x4ebc9d18 // mul v24.4s, v8.4s, v28.4s
	WORD $0x4ebd9598 // mla v24.4s, v12.4s, v29.4s
	WORD $0x4eb1bb18 // addv s24, v24.4s
	WORD $0x5e21db18 // scvtf s24, s24

	// Σ mins · (bsums[2j] + bsums[2j+1]).
	VLD1   (R13), [V20.H8, V21.H8]
	WORD $0x4e75be94 // addp v20.8h, v20.8h, v21.8h
	FMOVD  R11, F22
	VUXTL  V22.B8, V22.H8
	WORD $0x0e76c297 // smull v23.4s, v20.4h, v22.4h
	WORD $0x4e768297 // smlal2 v23.4s, v20.8h, v22.8h
	WORD $0x4eb1baf7 // addv s23, v23.4s
	WORD $0x5e21daf7 // scvtf s23, s23

	MOVHU  (R0), R3
	MOVHU  2(R0), R4
	FMOVS  R3, F2
	FMOVS  R4, F3
	WORD $0x1ee24042 // fcvt s2, h2
	WORD $0x1ee24063 // fcvt s3, h3
	FMOVS  (R1), F4
	FMULS  F4, F2, F2
	FMULS  F4, F3, F3
	FMADDS F2, F0, F24, F0
	FMADDS F3, F25, F23, F25
	ADD    $176, R0
	ADD    $292, R1
	SUB    $1, R2
	CBNZ   R2, q5kloop

q5kdone:
	FSUBS F25, F0, F0
	FMOVS F0, ret+56(FP)
	RET

// func vecDotQ6_KNEON(row, act []byte, n int) float32
//
// Per 256-value block, in two halves of 128: each 16-value group's 6-bit
// quants rebuilt from ql and qh minus 32 (q6Kvalues), Σq·y by SDOT per
// group, reduced to one lane each by ADDP and multiplied by the group's
// int8 scale; then d·y.d·Σ into the float accumulator.
TEXT ·vecDotQ6_KNEON(SB), NOSPLIT, $0-60
	MOVD  row_base+0(FP), R0
	MOVD  act_base+24(FP), R1
	MOVD  n+48(FP), R2
	LSR   $8, R2
	FMOVS ZR, F0
	VMOVI $15, V30.B16
	VMOVI $48, V31.B16
	VMOVI $32, V29.B16
	CBZ   R2, q6kdone

q6kloop:
	VEOR V24.B16, V24.B16, V24.B16
	MOVD R0, R12        // ql
	ADD  $128, R0, R3   // qh
	ADD  $192, R0, R4   // scales
	ADD  $4, R1, R13    // y quants
	MOVD $2, R5

q6khalf:
	VEOR   V8.B16, V8.B16, V8.B16
	VEOR   V9.B16, V9.B16, V9.B16
	VEOR   V10.B16, V10.B16, V10.B16
	VEOR   V11.B16, V11.B16, V11.B16
	VEOR   V12.B16, V12.B16, V12.B16
	VEOR   V13.B16, V13.B16, V13.B16
	VEOR   V14.B16, V14.B16, V14.B16
	VEOR   V15.B16, V15.B16, V15.B16
	VLD1.P 64(R12), [V1.B16, V2.B16, V3.B16, V4.B16]
	VLD1.P 32(R3), [V5.B16, V6.B16]
	VLD1.P 64(R13), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P 64(R13), [V20.B16, V21.B16, V22.B16, V23.B16]

	// Values l and l+16 (l < 16): ql & 15 | (qh & 3) << 4.
	VAND  V30.B16, V1.B16, V28.B16
	VSHL  $4, V5.B16, V7.B16
	VAND  V31.B16, V7.B16, V7.B16
	VORR  V7.B16, V28.B16, V28.B16
	VSUB  V29.B16, V28.B16, V28.B16
	WORD $0x4e909788 // sdot v8.4s, v28.16b, v16.16b
	VAND  V30.B16, V2.B16, V28.B16
	VSHL  $4, V6.B16, V7.B16
	VAND  V31.B16, V7.B16, V7.B16
	VORR  V7.B16, V28.B16, V28.B16
	VSUB  V29.B16, V28.B16, V28.B16
	WORD $0x4e919789 // sdot v9.4s, v28.16b, v17.16b

	// Values 32+l: ql[32+l] & 15 | (qh >> 2 & 3) << 4.
	VAND  V30.B16, V3.B16, V28.B16
	VSHL  $2, V5.B16, V7.B16
	VAND  V31.B16, V7.B16, V7.B16
	VORR  V7.B16, V28.B16, V28.B16
	VSUB  V29.B16, V28.B16, V28.B16
	WORD $0x4e92978a // sdot v10.4s, v28.16b, v18.16b
	VAND  V30.B16, V4.B16, V28.B16
	VSHL  $2, V6.B16, V7.B16
	VAND  V31.B16, V7.B16, V7.B16
	VORR  V7.B16, V28.B16, V28.B16
	VSUB  V29.B16, V28.B16, V28.B16
	WORD $0x4e93978b // sdot v11.4s, v28.16b, v19.16b

	// Values 64+l: ql >> 4 | (qh >> 4 & 3) << 4.
	VUSHR $4, V1.B16, V28.B16
	VAND  V31.B16, V5.B16, V7.B16
	VORR  V7.B16, V28.B16, V28.B16
	VSUB  V29.B16, V28.B16, V28.B16
	WORD $0x4e94978c // sdot v12.4s, v28.16b, v20.16b
	VUSHR $4, V2.B16, V28.B16
	VAND  V31.B16, V6.B16, V7.B16
	VORR  V7.B16, V28.B16, V28.B16
	VSUB  V29.B16, V28.B16, V28.B16
	WORD $0x4e95978d // sdot v13.4s, v28.16b, v21.16b

	// Values 96+l: ql[32+l] >> 4 | (qh >> 6) << 4.
	VUSHR $4, V3.B16, V28.B16
	VUSHR $2, V5.B16, V7.B16
	VAND  V31.B16, V7.B16, V7.B16
	VORR  V7.B16, V28.B16, V28.B16
	VSUB  V29.B16, V28.B16, V28.B16
	WORD $0x4e96978e // sdot v14.4s, v28.16b, v22.16b
	VUSHR $4, V4.B16, V28.B16
	VUSHR $2, V6.B16, V7.B16
	VAND  V31.B16, V7.B16, V7.B16
	VORR  V7.B16, V28.B16, V28.B16
	VSUB  V29.B16, V28.B16, V28.B16
	WORD $0x4e97978f // sdot v15.4s, v28.16b, v23.16b

	// The eight group sums times their scales.
	WORD $0x4ea9bd08 // addp v8.4s, v8.4s, v9.4s
	WORD $0x4eabbd4a // addp v10.4s, v10.4s, v11.4s
	WORD $0x4eaabd08 // addp v8.4s, v8.4s, v10.4s
	WORD $0x4eadbd8c // addp v12.4s, v12.4s, v13.4s
	WORD $0x4eafbdce // addp v14.4s, v14.4s, v15.4s
	WORD $0x4eaebd8c // addp v12.4s, v12.4s, v14.4s
	FMOVD.P 8(R4), F25
	WORD $0x0f08a739 // sxtl v25.8h, v25.8b
	WORD $0x0f10a73a // sxtl v26.4s, v25.4h
	WORD $0x4f10a73b // sxtl2 v27.4s, v25.8h
	WORD $0x4eba9518 // mla v24.4s, v8.4s, v26.4s
	WORD $0x4ebb9598 // mla v24.4s, v12.4s, v27.4s
	SUB  $1, R5
	CBNZ R5, q6khalf

	WORD $0x4eb1bb18 // addv s24, v24.4s
	WORD $0x5e21db18 // scvtf s24, s24
	MOVHU  208(R0), R3
	FMOVS  R3, F2
	WORD $0x1ee24042 // fcvt s2, h2
	FMOVS  (R1), F4
	FMULS  F4, F2, F2
	FMADDS F2, F0, F24, F0
	ADD    $210, R0
	ADD    $292, R1
	SUB    $1, R2
	CBNZ   R2, q6kloop

q6kdone:
	FMOVS F0, ret+56(FP)
	RET

// func dotF16F32NEON(row []byte, x []float32) float32
//
// dotF32 for an fp16 row against float activations (the attention's
// values against its softmax weights).
TEXT ·dotF16F32NEON(SB), NOSPLIT, $0-52
	MOVD row_base+0(FP), R0
	MOVD x_base+24(FP), R1
	MOVD x_len+32(FP), R2
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16

hfloop16:
	CMP    $16, R2
	BLT    hfloop4
	VLD1.P 32(R0), [V4.H8, V5.H8]
	VLD1.P 64(R1), [V20.S4, V21.S4, V22.S4, V23.S4]
	WORD $0x0e217890 // fcvtl v16.4s, v4.4h
	WORD $0x4e217891 // fcvtl2 v17.4s, v4.8h
	WORD $0x0e2178b2 // fcvtl v18.4s, v5.4h
	WORD $0x4e2178b3 // fcvtl2 v19.4s, v5.8h
	VFMLA  V20.S4, V16.S4, V0.S4
	VFMLA  V21.S4, V17.S4, V1.S4
	VFMLA  V22.S4, V18.S4, V2.S4
	VFMLA  V23.S4, V19.S4, V3.S4
	SUB    $16, R2
	B      hfloop16

hfloop4:
	CMP    $4, R2
	BLT    hfreduce
	VLD1.P 8(R0), [V4.H4]
	VLD1.P 16(R1), [V20.S4]
	WORD $0x0e217890 // fcvtl v16.4s, v4.4h
	VFMLA  V20.S4, V16.S4, V0.S4
	SUB    $4, R2
	B      hfloop4

hfreduce:
	WORD $0x4e21d400 // fadd v0.4s, v0.4s, v1.4s
	WORD $0x4e23d442 // fadd v2.4s, v2.4s, v3.4s
	WORD $0x4e22d400 // fadd v0.4s, v0.4s, v2.4s
	WORD $0x6e20d400 // faddp v0.4s, v0.4s, v0.4s
	WORD $0x7e30d800 // faddp s0, v0.2s

hftail:
	CBZ     R2, hfdone
	MOVHU.P 2(R0), R3
	FMOVS.P 4(R1), F5
	FMOVS   R3, F4
	WORD $0x1ee24084 // fcvt s4, h4
	FMADDS  F4, F0, F5, F0
	SUB     $1, R2
	B       hftail

hfdone:
	FMOVS F0, ret+48(FP)
	RET

// func quantF16NEON(x *float32, dst *byte, n int)
//
// quantF16 over n values, a multiple of 8: FCVTN rounds to nearest even as
// F32ToF16 does (with the default FPCR), NaN payloads aside.
TEXT ·quantF16NEON(SB), NOSPLIT, $0-24
	MOVD x+0(FP), R0
	MOVD dst+8(FP), R1
	MOVD n+16(FP), R2
	LSR  $3, R2
	CBZ  R2, qf16done

qf16loop:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	WORD $0x0e216802 // fcvtn v2.4h, v0.4s
	WORD $0x4e216822 // fcvtn2 v2.8h, v1.4s
	VST1.P [V2.H8], 16(R1)
	SUB    $1, R2
	CBNZ   R2, qf16loop

qf16done:
	RET

