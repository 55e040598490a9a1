{
  "variables": {
    "numkong_root": "../../node_modules/usearch/numkong"
  },
  "includes": ["../../node_modules/usearch/numkong/numkong.gypi"],
  "targets": [
    {
      "target_name": "hnsw_walk",
      "sources": ["src/walk.cpp"],
      "dependencies": ["numkong_lib"],
      "include_dirs": ["../../node_modules/usearch/include", "../../node_modules/usearch/numkong/include"],
      "defines": ["USEARCH_USE_NUMKONG=1", "NK_DYNAMIC_DISPATCH=1"],
      "cflags_cc": ["-O3", "-std=c++17", "-fexceptions", "-Wno-unknown-pragmas", "-Wno-maybe-uninitialized"],
      "cflags_cc!": ["-fno-exceptions"]
    }
  ]
}
