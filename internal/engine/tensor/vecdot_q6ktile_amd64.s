//go:build amd64 && !purego

#include "textflag.h"

// vecDotQ6_KTile4VNNI: four Q6_K weight rows against four Q8_K activation
// rows, bit for bit vecDotQ6_KAVX2 (vecdot_amd64.s) per pair. That kernel
// gives each block eight int32 lanes, lane k the exact sum over the block's
// eight 32-value chunks of sc·q·y for the chunk's values 4k..4k+3 (q the
// unsigned 6-bit quant, sc its 16-value group's scale), minus
// 32·(sc[2k]·bsum[2k] + sc[2k+1]·bsum[2k+1]); then one FMA of the lanes as
// floats by fp16(d)·y.d into an eight-lane accumulator, and HSUM8 at the
// end. Here a zmm register holds two chunks (64 consecutive values), so
// VPMADDUBSW and VPDPWSSD (scale words per byte pair) leave chunk 2i's
// lanes in the low eight dwords and chunk 2i+1's in the high eight; adding
// the halves gives the same exact lanes, and the float steps are the same
// operations. Each row's quants and scales are unpacked once per block and
// used against all four activations; the 16 accumulators live in the frame.

DATA q6ktidx0<>+0(SB)/8, $0x0000000000000000
DATA q6ktidx0<>+8(SB)/8, $0x0000000000000000
DATA q6ktidx0<>+16(SB)/8, $0x0001000100010001
DATA q6ktidx0<>+24(SB)/8, $0x0001000100010001
DATA q6ktidx0<>+32(SB)/8, $0x0002000200020002
DATA q6ktidx0<>+40(SB)/8, $0x0002000200020002
DATA q6ktidx0<>+48(SB)/8, $0x0003000300030003
DATA q6ktidx0<>+56(SB)/8, $0x0003000300030003
GLOBL q6ktidx0<>(SB), RODATA|NOPTR, $64

DATA q6ktidx1<>+0(SB)/8, $0x0004000400040004
DATA q6ktidx1<>+8(SB)/8, $0x0004000400040004
DATA q6ktidx1<>+16(SB)/8, $0x0005000500050005
DATA q6ktidx1<>+24(SB)/8, $0x0005000500050005
DATA q6ktidx1<>+32(SB)/8, $0x0006000600060006
DATA q6ktidx1<>+40(SB)/8, $0x0006000600060006
DATA q6ktidx1<>+48(SB)/8, $0x0007000700070007
DATA q6ktidx1<>+56(SB)/8, $0x0007000700070007
GLOBL q6ktidx1<>(SB), RODATA|NOPTR, $64

DATA q6ktidx2<>+0(SB)/8, $0x0008000800080008
DATA q6ktidx2<>+8(SB)/8, $0x0008000800080008
DATA q6ktidx2<>+16(SB)/8, $0x0009000900090009
DATA q6ktidx2<>+24(SB)/8, $0x0009000900090009
DATA q6ktidx2<>+32(SB)/8, $0x000a000a000a000a
DATA q6ktidx2<>+40(SB)/8, $0x000a000a000a000a
DATA q6ktidx2<>+48(SB)/8, $0x000b000b000b000b
DATA q6ktidx2<>+56(SB)/8, $0x000b000b000b000b
GLOBL q6ktidx2<>(SB), RODATA|NOPTR, $64

DATA q6ktidx3<>+0(SB)/8, $0x000c000c000c000c
DATA q6ktidx3<>+8(SB)/8, $0x000c000c000c000c
DATA q6ktidx3<>+16(SB)/8, $0x000d000d000d000d
DATA q6ktidx3<>+24(SB)/8, $0x000d000d000d000d
DATA q6ktidx3<>+32(SB)/8, $0x000e000e000e000e
DATA q6ktidx3<>+40(SB)/8, $0x000e000e000e000e
DATA q6ktidx3<>+48(SB)/8, $0x000f000f000f000f
DATA q6ktidx3<>+56(SB)/8, $0x000f000f000f000f
GLOBL q6ktidx3<>(SB), RODATA|NOPTR, $64

// Word shift counts building a row's quants from its qh bits: the first
// zmm of a half takes qh<<4 (values 0–31) and qh<<2 (32–63), the second
// qh (64–95) and qh>>2 (96–127), each masked to bits 4 and 5.
DATA q6ktshla<>+0(SB)/8, $0x0004000400040004
DATA q6ktshla<>+8(SB)/8, $0x0004000400040004
DATA q6ktshla<>+16(SB)/8, $0x0004000400040004
DATA q6ktshla<>+24(SB)/8, $0x0004000400040004
DATA q6ktshla<>+32(SB)/8, $0x0002000200020002
DATA q6ktshla<>+40(SB)/8, $0x0002000200020002
DATA q6ktshla<>+48(SB)/8, $0x0002000200020002
DATA q6ktshla<>+56(SB)/8, $0x0002000200020002
GLOBL q6ktshla<>(SB), RODATA|NOPTR, $64

DATA q6ktshrb<>+0(SB)/8, $0x0000000000000000
DATA q6ktshrb<>+8(SB)/8, $0x0000000000000000
DATA q6ktshrb<>+16(SB)/8, $0x0000000000000000
DATA q6ktshrb<>+24(SB)/8, $0x0000000000000000
DATA q6ktshrb<>+32(SB)/8, $0x0002000200020002
DATA q6ktshrb<>+40(SB)/8, $0x0002000200020002
DATA q6ktshrb<>+48(SB)/8, $0x0002000200020002
DATA q6ktshrb<>+56(SB)/8, $0x0002000200020002
GLOBL q6ktshrb<>(SB), RODATA|NOPTR, $64

DATA q6ktnib<>+0(SB)/4, $0x0f0f0f0f
GLOBL q6ktnib<>(SB), RODATA|NOPTR, $4

DATA q6ktbits45<>+0(SB)/4, $0x30303030
GLOBL q6ktbits45<>(SB), RODATA|NOPTR, $4

// Q6KTHALF leaves the quants of half h of the row block at R9 in QA
// (values 128h..128h+63) and QB (128h+64..128h+127). Z0–Z3 are scratch.
#define Q6KTHALF(h, QA, QB) \
	VMOVDQU64       (64*h)(R9), Z0      \
	VBROADCASTI64X4 (128+32*h)(R9), Z1  \
	VPANDD          Z31, Z0, Z2         \
	VPSLLVW         Z29, Z1, Z3         \
	VPANDD          Z30, Z3, Z3         \
	VPORD           Z3, Z2, QA          \
	VPSRLW          $4, Z0, Z2          \
	VPANDD          Z31, Z2, Z2         \
	VPSRLVW         Z28, Z1, Z3         \
	VPANDD          Z30, Z3, Z3         \
	VPORD           Z3, Z2, QB

// Q6KTPAIR adds the unpacked row (quants Z4–Z7, scale words Z9–Z12,
// −32·scale words Y13, fp16(d) as float in X15) times the activation block
// at R10 to the accumulator at acc(SP).
#define Q6KTPAIR(acc) \
	VMOVDQU32     260(R10), Y16        \
	VPXORD        Z17, Z17, Z17        \
	VPDPWSSD      Z13, Z16, Z17        \
	VPMADDUBSW    4(R10), Z4, Z18      \
	VPDPWSSD      Z9, Z18, Z17         \
	VPMADDUBSW    68(R10), Z5, Z18     \
	VPDPWSSD      Z10, Z18, Z17        \
	VPMADDUBSW    132(R10), Z6, Z18    \
	VPDPWSSD      Z11, Z18, Z17        \
	VPMADDUBSW    196(R10), Z7, Z18    \
	VPDPWSSD      Z12, Z18, Z17        \
	VEXTRACTI64X4 $1, Z17, Y18         \
	VPADDD        Y18, Y17, Y17        \
	VCVTDQ2PS     Y17, Y17             \
	VMULSS        (R10), X15, X18      \
	VBROADCASTSS  X18, Y18             \
	VFMADD213PS   acc(SP), Y18, Y17    \
	VMOVUPS       Y17, acc(SP)

// Q6KTROW unpacks row r's block (at SI + r·BX) and adds it times the four
// activation blocks (at DI + a·DX) to accumulators 4r..4r+3.
#define Q6KTROW(r) \
	MOVQ         SI, R9                   \
	MOVQ         $r, AX                   \
	IMULQ        BX, AX                   \
	ADDQ         AX, R9                   \
	Q6KTHALF(0, Z4, Z5)                   \
	Q6KTHALF(1, Z6, Z7)                   \
	VPMOVSXBW    192(R9), Y8              \
	VPERMW       Z8, Z20, Z9              \
	VPERMW       Z8, Z21, Z10             \
	VPERMW       Z8, Z22, Z11             \
	VPERMW       Z8, Z23, Z12             \
	VPSLLW       $5, Y8, Y13              \
	VPXOR        Y14, Y14, Y14            \
	VPSUBW       Y13, Y14, Y13            \
	MOVWLZX      208(R9), AX              \
	VMOVD        AX, X15                  \
	VCVTPH2PS    X15, X15                 \
	MOVQ         DI, R10                  \
	Q6KTPAIR(128*r)                       \
	ADDQ         DX, R10                  \
	Q6KTPAIR(128*r+32)                    \
	ADDQ         DX, R10                  \
	Q6KTPAIR(128*r+64)                    \
	ADDQ         DX, R10                  \
	Q6KTPAIR(128*r+96)

// Q6KTOUT reduces the accumulator at acc(SP) as HSUM8 does and stores it
// to off(R11).
#define Q6KTOUT(acc, off) \
	VMOVUPS      acc(SP), Y0     \
	VEXTRACTF128 $1, Y0, X1      \
	VADDPS       X1, X0, X0      \
	VPERMILPS    $0x4e, X0, X1   \
	VADDPS       X1, X0, X0      \
	VPERMILPS    $0xb1, X0, X1   \
	VADDPS       X1, X0, X0      \
	VMOVSS       X0, off(R11)

// func vecDotQ6_KTile4VNNI(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)
//
// out[a·outStride+r] = vecDotQ6_KAVX2(row r, act a, 256·nb) for r, a < 4.
TEXT ·vecDotQ6_KTile4VNNI(SB), NOSPLIT, $512-56
	MOVQ rows+0(FP), SI
	MOVQ rowStride+8(FP), BX
	MOVQ acts+16(FP), DI
	MOVQ actStride+24(FP), DX
	MOVQ nb+32(FP), CX

	VPBROADCASTD q6ktnib<>(SB), Z31
	VPBROADCASTD q6ktbits45<>(SB), Z30
	VMOVDQU64    q6ktshla<>(SB), Z29
	VMOVDQU64    q6ktshrb<>(SB), Z28
	VMOVDQU64    q6ktidx0<>(SB), Z20
	VMOVDQU64    q6ktidx1<>(SB), Z21
	VMOVDQU64    q6ktidx2<>(SB), Z22
	VMOVDQU64    q6ktidx3<>(SB), Z23
	VPXORD       Z0, Z0, Z0
	MOVQ         $0, AX

q6ktzero:
	VMOVDQU64 Z0, (SP)(AX*1)
	ADDQ      $64, AX
	CMPQ      AX, $512
	JL        q6ktzero
	TESTQ     CX, CX
	JE        q6ktout

q6ktloop:
	Q6KTROW(0)
	Q6KTROW(1)
	Q6KTROW(2)
	Q6KTROW(3)
	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  q6ktloop

q6ktout:
	MOVQ out+40(FP), R11
	MOVQ outStride+48(FP), R12
	SHLQ $2, R12
	Q6KTOUT(0, 0)
	Q6KTOUT(128, 4)
	Q6KTOUT(256, 8)
	Q6KTOUT(384, 12)
	ADDQ R12, R11
	Q6KTOUT(32, 0)
	Q6KTOUT(160, 4)
	Q6KTOUT(288, 8)
	Q6KTOUT(416, 12)
	ADDQ R12, R11
	Q6KTOUT(64, 0)
	Q6KTOUT(192, 4)
	Q6KTOUT(320, 8)
	Q6KTOUT(448, 12)
	ADDQ R12, R11
	Q6KTOUT(96, 0)
	Q6KTOUT(224, 4)
	Q6KTOUT(352, 8)
	Q6KTOUT(480, 12)
	VZEROUPPER
	RET
