// Symbol visibility for the shared library build.
#pragma once

#if defined(INSTANCE_STATIC)
#define INSTANCE_EXPORT
#elif defined(INSTANCE_BUILDING)
#define INSTANCE_EXPORT __attribute__((visibility("default")))
#else
#define INSTANCE_EXPORT __attribute__((visibility("default")))
#endif
