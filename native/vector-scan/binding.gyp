{
  "targets": [
    {
      "target_name": "vector_scan",
      "sources": ["src/scan.c"],
      "cflags": ["-O3", "-std=c11", "-Wall", "-Wextra", "-pthread"],
      "ldflags": ["-pthread"]
    }
  ]
}
