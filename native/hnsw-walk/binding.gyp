{
  "variables": {
    "numkong_root": "../../node_modules/usearch/numkong"
  },
  "targets": [
    {
      # NumKong's library as numkong.gypi builds it, but against the header probe-isa.cjs writes (it turns off
      # the ARM SDOT kernels GCC 11/12 cannot build, see there).
      "target_name": "numkong_lib",
      "type": "static_library",
      "sources": ["<!@(node probe-isa.cjs --sources)"],
      "include_dirs": ["<(numkong_root)/include"],
      "defines": ["NK_NATIVE_F16=0", "NK_NATIVE_BF16=0", "NK_DYNAMIC_DISPATCH=1"],
      "cflags": [
        "-std=c11",
        "-O3",
        "-Wno-unknown-pragmas",
        "-Wno-maybe-uninitialized",
        "-Wno-cast-function-type",
        "-Wno-switch",
        "-Wno-psabi",
        "-include",
        "<!(node probe-isa.cjs)"
      ],
      "direct_dependent_settings": {
        "include_dirs": ["<(numkong_root)/include"]
      }
    },
    {
      "target_name": "hnsw_walk",
      "sources": ["src/walk.cpp"],
      "dependencies": ["numkong_lib"],
      "include_dirs": ["../../node_modules/usearch/include", "<(numkong_root)/include"],
      "defines": ["USEARCH_USE_NUMKONG=1", "NK_DYNAMIC_DISPATCH=1"],
      "cflags_cc": ["-O3", "-std=c++17", "-fexceptions", "-Wno-unknown-pragmas", "-Wno-maybe-uninitialized"],
      "cflags_cc!": ["-fno-exceptions"]
    }
  ]
}
