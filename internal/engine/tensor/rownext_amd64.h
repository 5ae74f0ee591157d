// ROWNEXT ends one row of a rows kernel, func(rows *byte, rowStride,
// nrows int, act *byte, n int, out *float32): it stores X0 at out,
// advances out and the row pointer ROW, and loops to LOOP while the row
// count COUNT lasts. AX is scratch.
#define ROWNEXT(ROW, COUNT, LOOP) \
	MOVQ   out+40(FP), AX \
	VMOVSS X0, (AX) \
	ADDQ   $4, AX \
	MOVQ   AX, out+40(FP) \
	ADDQ   rowStride+8(FP), ROW \
	DECQ   COUNT \
	JNZ    LOOP
