#!/usr/bin/env bash
# With neither --store nor INSTANCE_GUARD_STORE the store is the per-user
# folder ${XDG_STATE_HOME:-~/.local/state}/instance-guard/NAME, NAME being
# --name or the command's basename; the child gets INSTANCE_GUARD_ID; the
# INSTANCE_GUARD_* variables are fallbacks for the flags.
source "$(dirname "$0")/lib.sh"

# NAME from the command's basename, under XDG_STATE_HOME.
cat >"$WORK/mysvc" <<'SCRIPT'
#!/usr/bin/env bash
ls "$XDG_STATE_HOME/instance-guard/mysvc/instances" >"$WORK/mysvc.listing"
echo "$INSTANCE_GUARD_ID" >"$WORK/mysvc.id"
SCRIPT
chmod +x "$WORK/mysvc"
run_guard run --id svc-1 -- "$WORK/mysvc"
expect_exit 0 "run with the default store"
grep -qx svc-1 "$WORK/mysvc.listing" || fail "no record under \$XDG_STATE_HOME/instance-guard/mysvc"
grep -qx svc-1 "$WORK/mysvc.id" || fail "the child did not get INSTANCE_GUARD_ID=svc-1"
ok "default store \$XDG_STATE_HOME/instance-guard/<basename>; child got INSTANCE_GUARD_ID"

# Credential variables stay with the guard, whatever the store; the child's
# other variables pass, PGPASSWORD too when the store is not PostgreSQL (the
# guard does not read it then).
INSTANCE_GUARD_USER=u INSTANCE_GUARD_PASSWORD=Pw-env-1 INSTANCE_GUARD_TOKEN=Tk-env-2 \
  INSTANCE_GUARD_CS3_ID=sa INSTANCE_GUARD_CS3_SECRET=Sc-env-3 INSTANCE_GUARD_CS3_SECRET_FILE=/nonexistent \
  PGPASSWORD=Pg-own-4 MY_SETTING=kept run_guard run --id env-1 -- env
expect_exit 0 "run env with credential variables set"
expect_clean_child_env "$WORK/last.out" Pw-env-1 Tk-env-2 Sc-env-3
grep -qx MY_SETTING=kept "$WORK/last.out" || fail "the child lost an ordinary variable"
grep -qx PGPASSWORD=Pg-own-4 "$WORK/last.out" || fail "the child lost PGPASSWORD on a directory store"
ok "the child's environment holds no credential variable; its own variables pass"

# --name, and HOME when XDG_STATE_HOME is unset; status finds it by --name.
home=$WORK/home
mkdir -p "$home"
XDG_STATE_HOME= HOME=$home start_guard named run --name web -- bash -c "$(sleeper named)"
wait_until 5 test -f "$WORK/named.started" || fail "the guarded child did not start"
read -r _ id <"$WORK/named.started"
[[ $id =~ ^[0-9a-f]{16}$ ]] || fail "generated id '$id' is not 16 hex digits"
[[ -f $home/.local/state/instance-guard/web/instances/$id ]] || fail "no record under ~/.local/state/instance-guard/web"
XDG_STATE_HOME= HOME=$home run_guard status --name web --json
expect_exit 0 "status --name web"
[[ $(jq -r '.[0].id' "$WORK/last.out") == "$id" ]] || fail "status --name web does not show $id"
ok "default store ~/.local/state/instance-guard/<--name>; generated id $id"

# Environment fallbacks.
INSTANCE_GUARD_STORE=$STORE INSTANCE_GUARD_ID=from-env INSTANCE_GUARD_TTL=45s \
  run_guard run -- bash -c 'cat "$INSTANCE_GUARD_STORE/instances/$INSTANCE_GUARD_ID"'
expect_exit 0 "run configured from the environment"
record=$WORK/last.out
[[ $(jq -r .id "$record") == from-env ]] || fail "INSTANCE_GUARD_ID was not used: $(cat "$record")"
ttl=$(jq -r '[.started_at, .expires_at] | map(sub("\\.[0-9]+"; "") | fromdate) | .[1] - .[0]' "$record")
[[ $ttl == 45 ]] || fail "INSTANCE_GUARD_TTL=45s gave a record living ${ttl}s"
ok "INSTANCE_GUARD_STORE, INSTANCE_GUARD_ID and INSTANCE_GUARD_TTL are honoured"
