#!/usr/bin/env bash
# Headers by audience (ARCHITECTURE.md): a consumer that includes
# instance/guard.hpp, instance/open_store.hpp or instance/admin.hpp sees no
# header of the store SDK (instance/sdk/) and no test double
# (instance/testing.hpp), and the core library holds no test double.
#   headers_test.sh <c++ compiler> <libinstance_core.a or .so>
set -euo pipefail
cd "$(dirname "$0")/../.."
cxx=${1:?compiler}
core=${2:?the core library}
status=0
# The implementers' and the tests' types, as a declaration names them.
implementer_types='(class|struct) [^;{]*\b(TunedTimeouts|StoreTimeouts|StoreWrapper|StartupBudget|LockGrants|FakeClock|ManualScheduler)\b'
for header in instance/guard.hpp instance/open_store.hpp instance/admin.hpp; do
  # -M lists every header the translation unit reads; -E what it declares.
  deps=$(printf '#include "%s"\n' "$header" | "$cxx" -std=c++23 -M -I include -x c++ -)
  code=$(printf '#include "%s"\n' "$header" | "$cxx" -std=c++23 -E -P -I include -x c++ -)
  leaked=$(grep -oE 'include/instance/(sdk/[a-z_]+|testing)\.hpp' <<<"$deps" | sort -u || true)
  types=$(grep -oE "$implementer_types" <<<"$code" | sort -u || true)
  if [[ -n $leaked || -n $types ]]; then
    echo "headers: $header shows consumers what is not theirs:" $leaked $types >&2
    status=1
  else
    echo "headers: $header shows no SDK or test header or type"
  fi
done
# The test doubles live in instance::testing, never in the production core.
symbols=$(nm -C "$core")
if grep -qE ' [TW] instance::(FakeClock|ManualScheduler)::' <<<"$symbols"; then
  echo "headers: $core defines the test doubles (FakeClock, ManualScheduler)" >&2
  status=1
else
  echo "headers: $(basename "$core") holds no test double"
fi
exit "$status"
