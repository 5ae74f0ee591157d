//go:build amd64 && !purego

#include "textflag.h"

// expSubAVX2 is expSub (exp.go) eight lanes at a time, with FMA for the
// reduction and the polynomial steps. The lane sums are reduced as HSUM8
// does (vecdot_amd64.s), then the tail of fewer than eight elements is added
// one by one.

// Scalars, broadcast into registers.
DATA expconst<>+0(SB)/4, $1.44269504088896341 // log2 e
DATA expconst<>+4(SB)/4, $0.693359375         // C1
DATA expconst<>+8(SB)/4, $-2.12194440e-4      // C2
DATA expconst<>+12(SB)/4, $1.9875691500e-4    // P0
DATA expconst<>+16(SB)/4, $1.0
DATA expconst<>+20(SB)/4, $-87.33654          // expMin
DATA expconst<>+24(SB)/4, $88.0               // expMax
DATA expconst<>+28(SB)/4, $127
GLOBL expconst<>(SB), RODATA|NOPTR, $32

// P1..P5 in eight lanes each, for memory operands.
DATA expP1<>+0(SB)/8, $0x3ab743ce3ab743ce
DATA expP1<>+8(SB)/8, $0x3ab743ce3ab743ce
DATA expP1<>+16(SB)/8, $0x3ab743ce3ab743ce
DATA expP1<>+24(SB)/8, $0x3ab743ce3ab743ce
GLOBL expP1<>(SB), RODATA|NOPTR, $32

DATA expP2<>+0(SB)/8, $0x3c0889083c088908
DATA expP2<>+8(SB)/8, $0x3c0889083c088908
DATA expP2<>+16(SB)/8, $0x3c0889083c088908
DATA expP2<>+24(SB)/8, $0x3c0889083c088908
GLOBL expP2<>(SB), RODATA|NOPTR, $32

DATA expP3<>+0(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expP3<>+8(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expP3<>+16(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expP3<>+24(SB)/8, $0x3d2aa9c13d2aa9c1
GLOBL expP3<>(SB), RODATA|NOPTR, $32

DATA expP4<>+0(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expP4<>+8(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expP4<>+16(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expP4<>+24(SB)/8, $0x3e2aaaaa3e2aaaaa
GLOBL expP4<>(SB), RODATA|NOPTR, $32

DATA expP5<>+0(SB)/8, $0x3f0000003f000000
DATA expP5<>+8(SB)/8, $0x3f0000003f000000
DATA expP5<>+16(SB)/8, $0x3f0000003f000000
DATA expP5<>+24(SB)/8, $0x3f0000003f000000
GLOBL expP5<>(SB), RODATA|NOPTR, $32

// EXPSTEP replaces the lanes of R (x − m already) with e^x; N, Z and P are
// scratch. Constants: Y15 log2e, Y14 C1, Y13 C2, Y12 P0, Y6 1.0, Y5 expMin,
// Y4 expMax, Y3 127 (int32).
#define EXPSTEP(R, N, Z, P) \
	VMAXPS       Y5, R, R                \
	VMINPS       Y4, R, R                \
	VMULPS       Y15, R, N               \
	VROUNDPS     $0, N, N                \
	VFNMADD231PS Y14, N, R               \
	VFNMADD231PS Y13, N, R               \
	VMULPS       R, R, Z                 \
	VMOVAPS      Y12, P                  \
	VFMADD213PS  expP1<>(SB), R, P       \
	VFMADD213PS  expP2<>(SB), R, P       \
	VFMADD213PS  expP3<>(SB), R, P       \
	VFMADD213PS  expP4<>(SB), R, P       \
	VFMADD213PS  expP5<>(SB), R, P       \
	VFMADD213PS  R, Z, P                 \
	VADDPS       Y6, P, P                \
	VCVTPS2DQ    N, N                    \
	VPADDD       Y3, N, N                \
	VPSLLD       $23, N, N               \
	VMULPS       N, P, R

// EXPCONSTS loads the registers EXPSTEP reads.
#define EXPCONSTS \
	VBROADCASTSS expconst<>+0(SB), Y15  \
	VBROADCASTSS expconst<>+4(SB), Y14  \
	VBROADCASTSS expconst<>+8(SB), Y13  \
	VBROADCASTSS expconst<>+12(SB), Y12 \
	VBROADCASTSS expconst<>+16(SB), Y6  \
	VBROADCASTSS expconst<>+20(SB), Y5  \
	VBROADCASTSS expconst<>+24(SB), Y4  \
	VPBROADCASTD expconst<>+28(SB), Y3

// func expSubAVX2(x []float32, m float32) float32
TEXT ·expSubAVX2(SB), NOSPLIT, $0-36
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS m+24(FP), Y2
	EXPCONSTS
	VXORPS       Y0, Y0, Y0
	MOVQ         CX, DX
	SHRQ         $3, DX
	JE           expreduce

exploop:
	VMOVUPS (SI), Y1
	VSUBPS  Y2, Y1, Y1
	EXPSTEP(Y1, Y7, Y8, Y9)
	VMOVUPS Y1, (SI)
	VADDPS  Y1, Y0, Y0
	ADDQ    $32, SI
	DECQ    DX
	JNZ     exploop

expreduce:
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VADDPS       X1, X0, X0
	ANDQ         $7, CX
	JE           expdone

exptail:
	VMOVSS (SI), X1
	VSUBPS Y2, Y1, Y1
	EXPSTEP(Y1, Y7, Y8, Y9)
	VMOVSS X1, (SI)
	VADDSS X1, X0, X0
	ADDQ   $4, SI
	DECQ   CX
	JNZ    exptail

expdone:
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func swigluAVX2(gate, up []float32)
//
// swiglu (exp.go) eight lanes at a time: gate[i] = gate[i]/(1 + e^−gate[i])
// · up[i], with the exponential EXPSTEP computes, in the vector body and the
// one-by-one tail alike.
TEXT ·swigluAVX2(SB), NOSPLIT, $0-48
	MOVQ         gate_base+0(FP), SI
	MOVQ         gate_len+8(FP), CX
	MOVQ         up_base+24(FP), DI
	EXPCONSTS
	VXORPS       Y2, Y2, Y2
	MOVQ         CX, DX
	SHRQ         $3, DX
	JE           silutailcheck

siluloop:
	VMOVUPS (SI), Y0
	VSUBPS  Y0, Y2, Y1
	EXPSTEP(Y1, Y7, Y8, Y9)
	VADDPS  Y6, Y1, Y1
	VDIVPS  Y1, Y0, Y0
	VMULPS  (DI), Y0, Y0
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    DX
	JNZ     siluloop

silutailcheck:
	ANDQ $7, CX
	JE   siludone

silutail:
	VMOVSS (SI), X0
	VSUBPS Y0, Y2, Y1
	EXPSTEP(Y1, Y7, Y8, Y9)
	VADDPS Y6, Y1, Y1
	VDIVPS Y1, Y0, Y0
	VMOVSS (DI), X10
	VMULSS X10, X0, X0
	VMOVSS X0, (SI)
	ADDQ   $4, SI
	ADDQ   $4, DI
	DECQ   CX
	JNZ    silutail

siludone:
	VZEROUPPER
	RET

// func scaleMaxAVX2(x []float32, s float32) float32
//
// scaleMax (exp.go) eight lanes at a time: each x[i]·s is one rounded
// multiply and the maximum is exact, so the results are the generic
// ones bit for bit.
TEXT ·scaleMaxAVX2(SB), NOSPLIT, $0-36
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS s+24(FP), Y2
	MOVL         $0xff800000, AX // −Inf
	VMOVD        AX, X0
	VBROADCASTSS X0, Y0
	MOVQ         CX, DX
	SHRQ         $3, DX
	JE           smreduce

smloop:
	VMULPS  (SI), Y2, Y1
	VMOVUPS Y1, (SI)
	VMAXPS  Y1, Y0, Y0
	ADDQ    $32, SI
	DECQ    DX
	JNZ     smloop

smreduce:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	ANDQ         $7, CX
	JE           smdone

smtail:
	VMOVSS (SI), X1
	VMULSS X2, X1, X1
	VMOVSS X1, (SI)
	VMAXSS X1, X0, X0
	ADDQ   $4, SI
	DECQ   CX
	JNZ    smtail

smdone:
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func scaleAVX2(x []float32, s float32)
//
// Multiplies every x[i] by s, bit for bit the scalar loop.
TEXT ·scaleAVX2(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS s+24(FP), Y2
	MOVQ         CX, DX
	SHRQ         $3, DX
	JE           sctail

scloop:
	VMULPS  (SI), Y2, Y1
	VMOVUPS Y1, (SI)
	ADDQ    $32, SI
	DECQ    DX
	JNZ     scloop

sctail:
	ANDQ $7, CX
	JE   scdone

sctail1:
	VMOVSS (SI), X1
	VMULSS X2, X1, X1
	VMOVSS X1, (SI)
	ADDQ   $4, SI
	DECQ   CX
	JNZ    sctail1

scdone:
	VZEROUPPER
	RET
