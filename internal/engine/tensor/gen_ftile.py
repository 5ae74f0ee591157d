# Generates vecdot_ftile_amd64.s (F32 and F16 4-row x 3-activation tiles):
#   python3 gen_ftile.py > vecdot_ftile_amd64.s   (or go generate)
RP = ["SI", "R9", "R10", "R11"]
AP = ["DI", "R12", "R13"]
NA = 3

def acc(a, r, h):
    return 8 + 2 * (a * 4 + r) + h

out = []
w = out.append
w("""//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

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
""")

def kernel(name, es, load16, load8, tailload):
    # es: element size in bytes
    w(f"""
// func {name}(rows *byte, rowStride int, acts *byte, actStride int, n int, out *float32, outStride int)
TEXT ·{name}(SB), NOSPLIT, $0-56
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
""")
    for z in range(8, 32):
        w(f"\tVPXORD Z{z}, Z{z}, Z{z}\n")
    p = name
    w(f"""	XORQ AX, AX
	MOVQ CX, DX
	SHRQ $5, DX
	JZ   {p}_steps8

{p}_loop32:
""")
    for h in range(2):
        off = h * 16 * es
        for r in range(4):
            w("\t" + load16.format(off=off, base=RP[r], reg=f"Z{r}") + "\n")
        for a in range(NA):
            w("\t" + load16.format(off=off, base=AP[a], reg=f"Z{4+a}") + "\n")
        for a in range(NA):
            for r in range(4):
                w(f"\tVFMADD231PS Z{4+a}, Z{r}, Z{acc(a,r,h)}\n")
    w(f"""	ADDQ ${32*es}, AX
	DECQ DX
	JNZ  {p}_loop32

{p}_steps8:
	MOVQ CX, DX
	SHRQ $3, DX
	ANDQ $3, DX
	JZ   {p}_reduce
	MOVL $0xff, R8
	KMOVW R8, K1

{p}_loop8:
""")
    for r in range(4):
        w("\t" + load8.format(base=RP[r], reg=f"Y{r}") + "\n")
    for a in range(NA):
        w("\t" + load8.format(base=AP[a], reg=f"Y{4+a}") + "\n")
    for a in range(NA):
        for r in range(4):
            w(f"\tVFMADD231PS Z{4+a}, Z{r}, K1, Z{acc(a,r,0)}\n")
    w(f"""	ADDQ ${8*es}, AX
	DECQ DX
	JNZ  {p}_loop8

{p}_reduce:
	ANDQ $7, CX
	LEAQ (AX)(CX*{es}), CX
	MOVQ out+40(FP), BX
	MOVQ outStride+48(FP), DX
	SHLQ $2, DX
""")
    for a in range(NA):
        for r in range(4):
            lo, hi = acc(a, r, 0), acc(a, r, 1)
            lbl = f"{p}_tail{a}{r}"
            w(f"""	VEXTRACTF64X4 $1, Z{lo}, Y1
	VMOVAPS       Y{lo}, Y0
	VEXTRACTF64X4 $1, Z{hi}, Y3
	VMOVAPS       Y{hi}, Y2
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	MOVQ          AX, R8
{lbl}:
	CMPQ          R8, CX
	JGE           {lbl}done
""")
            for line in tailload(RP[r], AP[a]):
                w("\t" + line + "\n")
            w(f"""	ADDQ          ${es}, R8
	JMP           {lbl}
{lbl}done:
	VMOVSS        X0, {4*r}(BX)
""")
        if a < NA - 1:
            w("\tADDQ DX, BX\n")
    w("\tVZEROUPPER\n\tRET\n")

kernel("vecDotF32Tile43AVX512", 4,
       "VMOVUPS {off}({base})(AX*1), {reg}",
       "VMOVUPS ({base})(AX*1), {reg}",
       lambda rp, ap: [f"VMOVSS      ({rp})(R8*1), X4", f"VFMADD231SS ({ap})(R8*1), X4, X0"])
kernel("vecDotF16Tile43AVX512", 2,
       "VCVTPH2PS {off}({base})(AX*1), {reg}",
       "VCVTPH2PS ({base})(AX*1), {reg}",
       lambda rp, ap: [f"VPINSRW     $0, ({rp})(R8*1), X4, X4", f"VPINSRW     $0, ({ap})(R8*1), X5, X5",
                       "VCVTPH2PS   X4, X4", "VCVTPH2PS   X5, X5", "VFMADD231SS X5, X4, X0"])
import sys
sys.stdout.write("".join(out))
