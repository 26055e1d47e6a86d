package kernels

// vecByPath holds the float32 row primitives of each path.
var vecByPath = [...]*vec32{PathGo: goVec, PathAVX2: goVec, PathAVX512: goVec}
