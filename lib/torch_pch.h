// lib/torch_pch.h
// Precompiled header for the LibTorch-using targets: <torch/torch.h> costs ~18 s per translation
// unit on a 2-core machine; precompiled once, every file that uses it compiles in a few seconds.
#pragma once
#include <torch/torch.h>
