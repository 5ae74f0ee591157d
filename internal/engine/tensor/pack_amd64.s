//go:build amd64 && !purego

#include "textflag.h"

// The packed MXFP4 product (pack.go, pack_amd64.go): eight weight rows
// against one Q8_0 activation row, a row per lane.
//
// The codes decode through VPSHUFB to u = v + 12, where v is the doubled
// E2M1 value (−12…12), so that u is unsigned and VPMADDUBSW takes it as
// is: Σ v·y = Σ u·y − 12·Σ y, the second sum shared by all eight rows.
// u ≤ 24 and |y| ≤ 127 (QuantizeAct), so each int16 lane, the sum of four
// VPMADDUBSW pairs, stays within ±24384: exact.

DATA pkfp4u<>+0(SB)/8, $0x181412100f0e0d0c
DATA pkfp4u<>+8(SB)/8, $0x00040608090a0b0c
DATA pkfp4u<>+16(SB)/8, $0x181412100f0e0d0c
DATA pkfp4u<>+24(SB)/8, $0x00040608090a0b0c
GLOBL pkfp4u<>(SB), RODATA|NOPTR, $32

DATA pknib<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA pknib<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA pknib<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA pknib<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL pknib<>(SB), RODATA|NOPTR, $32

DATA pkones8<>+0(SB)/8, $0x0101010101010101
DATA pkones8<>+8(SB)/8, $0x0101010101010101
DATA pkones8<>+16(SB)/8, $0x0101010101010101
DATA pkones8<>+24(SB)/8, $0x0101010101010101
GLOBL pkones8<>(SB), RODATA|NOPTR, $32

DATA pkones16<>+0(SB)/8, $0x0001000100010001
DATA pkones16<>+8(SB)/8, $0x0001000100010001
DATA pkones16<>+16(SB)/8, $0x0001000100010001
DATA pkones16<>+24(SB)/8, $0x0001000100010001
GLOBL pkones16<>(SB), RODATA|NOPTR, $32

DATA pktwelve16<>+0(SB)/8, $0x000c000c000c000c
DATA pktwelve16<>+8(SB)/8, $0x000c000c000c000c
DATA pktwelve16<>+16(SB)/8, $0x000c000c000c000c
DATA pktwelve16<>+24(SB)/8, $0x000c000c000c000c
GLOBL pktwelve16<>(SB), RODATA|NOPTR, $32

DATA pkone32<>+0(SB)/8, $0x0000000100000001
DATA pkone32<>+8(SB)/8, $0x0000000100000001
DATA pkone32<>+16(SB)/8, $0x0000000100000001
DATA pkone32<>+24(SB)/8, $0x0000000100000001
GLOBL pkone32<>(SB), RODATA|NOPTR, $32

// e8m0Half's subnormal case: 0x00200000 << e for e < 2.
DATA pksub<>+0(SB)/8, $0x0020000000200000
DATA pksub<>+8(SB)/8, $0x0020000000200000
DATA pksub<>+16(SB)/8, $0x0020000000200000
DATA pksub<>+24(SB)/8, $0x0020000000200000
GLOBL pksub<>(SB), RODATA|NOPTR, $32

// PKQUARTERS leaves in ACC, two int32 lanes per row, Σ u·y of the four
// rows whose code bytes lie at lo(SI) (bytes 0–7) and hi(SI) (bytes 8–15),
// with the activation's quarters broadcast in Y8–Y11.
#define PKQUARTERS(lo, hi, ACC) \
	VMOVDQU    lo(SI), ACC    \
	VPSRLW     $4, ACC, Y3    \
	VPAND      Y13, ACC, ACC  \
	VPAND      Y13, Y3, Y3    \
	VPSHUFB    ACC, Y15, ACC  \
	VPSHUFB    Y3, Y15, Y3    \
	VPMADDUBSW Y8, ACC, ACC   \
	VPMADDUBSW Y9, Y3, Y3     \
	VPADDW     Y3, ACC, ACC   \
	VMOVDQU    hi(SI), Y3     \
	VPSRLW     $4, Y3, Y4     \
	VPAND      Y13, Y3, Y3    \
	VPAND      Y13, Y4, Y4    \
	VPSHUFB    Y3, Y15, Y3    \
	VPSHUFB    Y4, Y15, Y4    \
	VPMADDUBSW Y10, Y3, Y3    \
	VPMADDUBSW Y11, Y4, Y4    \
	VPADDW     Y3, ACC, ACC   \
	VPADDW     Y4, ACC, ACC   \
	VPMADDWD   Y12, ACC, ACC

// func mxfp4x8DotAVX2(packed *byte, groups int, act *byte, nb int, out *float32)
TEXT ·mxfp4x8DotAVX2(SB), NOSPLIT, $0-40
	MOVQ    packed+0(FP), SI
	MOVQ    groups+8(FP), R8
	MOVQ    nb+24(FP), R9
	MOVQ    out+32(FP), R10
	VMOVDQU pkfp4u<>(SB), Y15
	VMOVDQU pkones8<>(SB), Y14
	VMOVDQU pknib<>(SB), Y13
	VMOVDQU pkones16<>(SB), Y12
	TESTQ   R8, R8
	JE      pkdone

pkgroup:
	MOVQ act+16(FP), DI
	MOVQ R9, CX
	VXORPS Y0, Y0, Y0
	TESTQ CX, CX
	JE    pkstore

pkblock:
	// The activation's four 8-byte quarters, each in every qword.
	VPBROADCASTQ 2(DI), Y8
	VPBROADCASTQ 18(DI), Y9
	VPBROADCASTQ 10(DI), Y10
	VPBROADCASTQ 26(DI), Y11
	PKQUARTERS(8, 72, Y1)   // rows 0, 1 | 4, 5: two int32 lanes each
	PKQUARTERS(40, 104, Y2) // rows 2, 3 | 6, 7
	VPHADDD Y2, Y1, Y1      // rows 0–3 | 4–7: Σ u·y

	// 12·Σ y in every lane, taken off.
	VPMADDUBSW 2(DI), Y14, Y5
	VPMADDWD   pktwelve16<>(SB), Y5, Y5
	VPHADDD    Y5, Y5, Y5
	VPHADDD    Y5, Y5, Y5
	VPERM2I128 $1, Y5, Y5, Y6
	VPADDD     Y6, Y5, Y5
	VPSUBD     Y5, Y1, Y1
	VCVTDQ2PS  Y1, Y1

	// The rows' scales e8m0Half(e): (e−1)<<23, or 0x00200000<<e for e < 2.
	VPMOVZXBD (SI), Y5
	VPCMPGTD  pkone32<>(SB), Y5, Y6
	VMOVDQU   pksub<>(SB), Y7
	VPSLLVD   Y5, Y7, Y7
	VPSUBD    pkone32<>(SB), Y5, Y5
	VPSLLD    $23, Y5, Y5
	VPBLENDVB Y6, Y5, Y7, Y5

	// Times the activation block's scale, then into the accumulator.
	MOVWLZX      (DI), AX
	VMOVD        AX, X6
	VCVTPH2PS    X6, X6
	VBROADCASTSS X6, Y6
	VMULPS       Y6, Y5, Y5
	VFMADD231PS  Y5, Y1, Y0

	ADDQ $136, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  pkblock

pkstore:
	VMOVUPS Y0, (R10)
	ADDQ    $32, R10
	DECQ    R8
	JNZ     pkgroup

pkdone:
	VZEROUPPER
	RET
