# Generates vecdot_ktile_amd64.s, the AVX2 register tiles of the Q4_K, Q5_K
# and Q6_K weights against Q8_K activations:
#   python3 gen_ktile.py > vecdot_ktile_amd64.s       (or go generate)
#
# Each kernel takes R weight rows against A activation rows per pass (R×A
# int32 accumulators in ymm registers) and is bit for bit the one-row AVX2
# kernel (vecdot_amd64.s) per pair. That kernel gives every block eight
# int32 lanes, lane k the exact sum of the products of the block's bytes
# 4k..4k+3 of each 32-byte step (VPMADDUBSW then VPMADDWD by the sub-block
# scale), then one FMA of the lanes as floats by fp16(d)·y.d into an
# eight-lane accumulator; Q4_K adds a four-lane FMA of the mins against the
# activations' paired bsums by fp16(dmin)·y.d, and the end reduces both with
# the same shuffles. The tiles do the same instructions on the same bytes
# per pair, so the lanes hold the same integers (int32 addition is
# associative even when it wraps) and the float steps are the same
# operations in the same order. Each row's quants and scales are unpacked
# once per 32-byte step and used against the A activations; the float
# accumulators of the R·A pairs live in the frame.
import sys

# Rows × activations per pass: R·A accumulators + 7 operands ≤ 16. The
# kernels with fewer activations take the 1–3 a batch leaves over.
R, A = 2, 4
SHAPES = [(2, 4), (2, 3), (2, 2)]

out = []
w = out.append


def row(r, off):
    """Address of byte off of weight row r (SI, rowStride in R11)."""
    return f"{off}(SI)" if r == 0 else f"{off}(SI)(R11*{r})"


def act(a, off):
    """Address of byte off of activation row a (DI and R13 = DI+actStride,
    actStride in R12)."""
    return [f"{off}(DI)", f"{off}(DI)(R12*1)", f"{off}(DI)(R12*2)", f"{off}(R13)(R12*2)"][a]


def acc(r, a):
    """The int32 accumulator of pair (r, a)."""
    return f"Y{r * A + a}"


def frame(bs):
    """Frame layout: per pair an 8-lane float accumulator (32 bytes) and,
    for Q4_K and Q5_K, a 4-lane mins accumulator (16 bytes); per row the
    unpacked scales and, with bs (Q5_K), each scale broadcast to 32 bytes:
    sets their offsets, the frame size and ACC."""
    global FA, FM, SC, BS, FRAME, ACC
    ACC = [acc(r, a) for r in range(R) for a in range(A)]
    FA = 0
    FM = FA + 32 * R * A
    SC = FM + 16 * R * A
    BS = SC + 32 * R
    FRAME = BS + (256 * R if bs else 0)


def prologue(name, bs=False):
    frame(bs)
    # A frame past the nosplit limit takes the ordinary stack check.
    flags = "NOSPLIT, " if FRAME <= 512 else ""
    w(f"""
// func {name}(rows *byte, rowStride int, acts *byte, actStride int, nb int, out *float32, outStride int)
TEXT ·{name}(SB), {flags}${FRAME}-56
	MOVQ   rows+0(FP), SI
	MOVQ   rowStride+8(FP), R11
	MOVQ   acts+16(FP), DI
	MOVQ   actStride+24(FP), R12
	LEAQ   (DI)(R12*1), R13
	MOVQ   nb+32(FP), CX
	VXORPS Y0, Y0, Y0""")
    for p in range(R * A):
        w(f"\tVMOVUPS Y0, {FA + 32 * p}(SP)")
        w(f"\tVMOVUPS X0, {FM + 16 * p}(SP)")


def epilogue(name, mins):
    w(f"""
	MOVQ out+40(FP), AX
	MOVQ outStride+48(FP), BX
	SHLQ $2, BX""")
    for a in range(A):
        for r in range(R):
            p = r * A + a
            w(f"\tVMOVUPS {FA + 32 * p}(SP), Y0")
            w("\tHSUM8(Y0, X0, X2)")
            if mins:
                w(f"""	VMOVUPS   {FM + 16 * p}(SP), X1
	VPERMILPS $0x4e, X1, X2
	VADDPS    X2, X1, X1
	VPERMILPS $0xb1, X1, X2
	VADDPS    X2, X1, X1
	VSUBSS    X1, X0, X0""")
            w(f"\tVMOVSS X0, {4 * r}(AX)")
        if a + 1 < A:
            w("\tADDQ BX, AX")
    w("\tVZEROUPPER\n\tRET")


def next_block(label, rb):
    w(f"""	ADDQ ${rb}, SI
	ADDQ $292, DI
	ADDQ $292, R13
	DECQ CX
	JNZ  {label}
""")


# The shifts that move qh bits 2g and 2g+1 of a Q5_K block to bit 4 for the
# low and high nibbles of group g, as Q5KQUANTS's callers in vecdot_amd64.s.
Q5SHIFTS = [("VPSLLW", 4, "VPSLLW", 3), ("VPSLLW", 2, "VPSLLW", 1),
            ("VPSLLW", 0, "VPSRLW", 1), ("VPSRLW", 2, "VPSRLW", 3)]


def q45k(five):
    """Q4_K, or with five Q5_K: the same scales, mins and float steps, and
    a fifth quant bit from qh; Q5_K keeps its broadcast scales in the frame
    (BS) to free the two registers the qh bits take."""
    t, q = ("Q5_K", 5) if five else ("Q4_K", 4)
    name = f"vecDot{t}Tile{R}{A}AVX2"
    prologue(name, five)
    w("\tVMOVDQU ktnib<>(SB), Y15\n")
    w(f"q{q}kt{A}_loop:")
    if five:
        w("\tVMOVDQU ktbit4<>(SB), Y14")
    # Scales and mins of each row, as KSCALES (vecdot_amd64.s) unpacks them:
    # scales as int16 at SC+32r, mins as int16 at SC+32r+16.
    for r in range(R):
        w(f"""	MOVL  {row(r, 4)}, AX
	MOVL  {row(r, 8)}, BX
	MOVL  {row(r, 12)}, DX
	MOVL  AX, R8
	SHRL  $6, R8
	ANDL  $0x03030303, R8
	SHLL  $4, R8
	MOVL  DX, R9
	ANDL  $0x0f0f0f0f, R9
	ORL   R9, R8
	MOVL  BX, R10
	SHRL  $6, R10
	ANDL  $0x03030303, R10
	SHLL  $4, R10
	SHRL  $4, DX
	ANDL  $0x0f0f0f0f, DX
	ORL   DX, R10
	ANDL  $0x3f3f3f3f, AX
	ANDL  $0x3f3f3f3f, BX
	SHLQ  $32, R8
	ORQ   R8, AX
	SHLQ  $32, R10
	ORQ   R10, BX
	VMOVQ AX, X8
	VPMOVZXBW X8, X8
	VMOVDQU X8, {SC + 32 * r}(SP)
	VMOVQ BX, X9
	VPMOVZXBW X9, X9
	VMOVDQU X9, {SC + 32 * r + 16}(SP)""")
        if five:
            for j in range(8):
                w(f"""	VPBROADCASTW {SC + 32 * r + 2 * j}(SP), Y10
	VMOVDQU Y10, {BS + 256 * r + 32 * j}(SP)""")
    for a_ in ACC:
        w(f"\tVPXOR {a_}, {a_}, {a_}")
    for g in range(4):
        for r in range(R):
            if five:
                lop, ls, hop, hs = Q5SHIFTS[g]
                w(f"""	VMOVDQU {row(r, 48 + 32 * g)}, Y8
	VPSRLW  $4, Y8, Y9
	VPAND   Y15, Y8, Y8
	VPAND   Y15, Y9, Y9
	VMOVDQU {row(r, 16)}, Y10
	{lop}  ${ls}, Y10, Y11
	{hop}  ${hs}, Y10, Y10
	VPAND   Y14, Y11, Y11
	VPAND   Y14, Y10, Y10
	VPOR    Y11, Y8, Y8
	VPOR    Y10, Y9, Y9""")
                for a in range(A):
                    w(f"""	VPMADDUBSW {act(a, 4 + 64 * g)}, Y8, Y12
	VPMADDUBSW {act(a, 36 + 64 * g)}, Y9, Y13
	VPMADDWD   {BS + 256 * r + 64 * g}(SP), Y12, Y12
	VPMADDWD   {BS + 256 * r + 64 * g + 32}(SP), Y13, Y13
	VPADDD     Y12, {acc(r, a)}, {acc(r, a)}
	VPADDD     Y13, {acc(r, a)}, {acc(r, a)}""")
                continue
            w(f"""	VMOVDQU {row(r, 16 + 32 * g)}, Y8
	VPSRLW  $4, Y8, Y9
	VPAND   Y15, Y8, Y8
	VPAND   Y15, Y9, Y9
	VPBROADCASTW {SC + 32 * r + 4 * g}(SP), Y10
	VPBROADCASTW {SC + 32 * r + 4 * g + 2}(SP), Y11""")
            for a in range(A):
                w(f"""	VPMADDUBSW {act(a, 4 + 64 * g)}, Y8, Y12
	VPMADDUBSW {act(a, 36 + 64 * g)}, Y9, Y13
	VPMADDWD   Y10, Y12, Y12
	VPMADDWD   Y11, Y13, Y13
	VPADDD     Y12, {acc(r, a)}, {acc(r, a)}
	VPADDD     Y13, {acc(r, a)}, {acc(r, a)}""")
    # The block's float steps per pair, as KPROLOGUE and the loop end of
    # vecDotQ4_KAVX2: X(8+r) holds fp16 (d, dmin) of row r as floats.
    for r in range(R):
        w(f"""	MOVL      {row(r, 0)}, AX
	VMOVD     AX, X{8 + r}
	VCVTPH2PS X{8 + r}, X{8 + r}""")
    for a in range(A):
        w(f"""	VBROADCASTSS {act(a, 0)}, X10
	VMOVDQU      {act(a, 260)}, X14
	VPHADDW      {act(a, 276)}, X14, X14""")
        for r in range(R):
            p = r * A + a
            y = acc(r, a)
            x = "X" + y[1:]
            w(f"""	VMULPS       X10, X{8 + r}, X11
	VBROADCASTSS X11, Y12
	VCVTDQ2PS    {y}, {y}
	VMOVUPS      {FA + 32 * p}(SP), Y13
	VFMADD231PS  Y12, {y}, Y13
	VMOVUPS      Y13, {FA + 32 * p}(SP)
	VMOVSHDUP    X11, X11
	VBROADCASTSS X11, X11
	VPMADDWD     {SC + 32 * r + 16}(SP), X14, {x}
	VCVTDQ2PS    {x}, {x}
	VMOVUPS      {FM + 16 * p}(SP), X13
	VFMADD231PS  X11, {x}, X13
	VMOVUPS      X13, {FM + 16 * p}(SP)""")
    next_block(f"q{q}kt{A}_loop", 176 if five else 144)
    epilogue(name, True)


def q6k():
    name = f"vecDotQ6_KTile{R}{A}AVX2"
    prologue(name)
    w("""	VMOVDQU ktnib<>(SB), Y15
	VMOVDQU ktbits45<>(SB), Y14
	VMOVDQU ktpairspread<>(SB), Y13
""")
    w(f"q6kt{A}_loop:")
    # Each row's sixteen scales as int16 at SC+32r; every accumulator starts
    # at −32·Σ sc·bsum, as vecDotQ6_KAVX2's does.
    w("\tVPXOR Y12, Y12, Y12")
    for r in range(R):
        w(f"""	VPMOVSXBW {row(r, 192)}, Y8
	VMOVDQU   Y8, {SC + 32 * r}(SP)""")
        for a in range(A):
            y = acc(r, a)
            w(f"""	VPMADDWD  {act(a, 260)}, Y8, {y}
	VPSLLD    $5, {y}, {y}
	VPSUBD    {y}, Y12, {y}""")
    for h in range(2):
        for c in range(4):
            for r in range(R):
                ql = row(r, 64 * h + 32 * (c % 2))
                w(f"\tVMOVDQU {ql}, Y8")
                if c >= 2:
                    w("\tVPSRLW  $4, Y8, Y8")
                w("\tVPAND   Y15, Y8, Y8")
                w(f"\tVMOVDQU {row(r, 128 + 32 * h)}, Y9")
                w(["\tVPSLLW  $4, Y9, Y9", "\tVPSLLW  $2, Y9, Y9", "", "\tVPSRLW  $2, Y9, Y9"][c])
                w(f"""	VPAND   Y14, Y9, Y9
	VPOR    Y9, Y8, Y8
	VPBROADCASTD {SC + 32 * r + 16 * h + 4 * c}(SP), Y10
	VPSHUFB Y13, Y10, Y10""")
                for a in range(A):
                    y = acc(r, a)
                    w(f"""	VPMADDUBSW {act(a, 4 + 128 * h + 32 * c)}, Y8, Y11
	VPMADDWD   Y10, Y11, Y11
	VPADDD     Y11, {y}, {y}""")
    for r in range(R):
        w(f"""	MOVWLZX   {row(r, 208)}, AX
	VMOVD     AX, X{8 + r}
	VCVTPH2PS X{8 + r}, X{8 + r}""")
    for a in range(A):
        for r in range(R):
            p = r * A + a
            y = acc(r, a)
            w(f"""	VMULSS       {act(a, 0)}, X{8 + r}, X10
	VBROADCASTSS X10, Y10
	VCVTDQ2PS    {y}, {y}
	VMOVUPS      {FA + 32 * p}(SP), Y11
	VFMADD231PS  Y10, {y}, Y11
	VMOVUPS      Y11, {FA + 32 * p}(SP)""")
    next_block(f"q6kt{A}_loop", 210)
    epilogue(name, False)


w("""// Code generated by gen_ktile.py; DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// The AVX2 register tiles of Q4_K and Q6_K weights against Q8_K
// activations (see gen_ktile.py): R weight rows against A activation rows
// per pass, each pair bit for bit the one-row kernel of vecdot_amd64.s.
""")
for name, q in [("ktnib", "0x0f0f0f0f0f0f0f0f"), ("ktbits45", "0x3030303030303030"), ("ktbit4", "0x1010101010101010")]:
    for i in range(4):
        w(f"DATA {name}<>+{8 * i}(SB)/8, ${q}")
    w(f"GLOBL {name}<>(SB), RODATA|NOPTR, $32")
# As pairspread in vecdot_amd64.s: a broadcast pair of int16 scales (a, b)
# spread to a in the low 128-bit lane and b in the high one.
for i, q in enumerate(["0x0100010001000100"] * 2 + ["0x0302030203020302"] * 2):
    w(f"DATA ktpairspread<>+{8 * i}(SB)/8, ${q}")
w("GLOBL ktpairspread<>(SB), RODATA|NOPTR, $32")
for R, A in SHAPES:
    q45k(False)
    q45k(True)
    q6k()
sys.stdout.write("\n".join(l for l in out if l != "") + "\n")
