//===- test_main.cpp - Catch2 entry point of the kernel-template tests ----===//
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
