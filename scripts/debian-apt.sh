# Sourced by scripts/debian-kernel and scripts/debian-source: an apt
# configuration of klpresolve's own for Debian's trixie and sid suites
# (its lists under $KLPRESOLVE_APT, default /var/tmp/klpresolve-apt). The
# machine's own sources are neither read nor changed, nothing is
# installed; packages are only downloaded. Sets apt_opts and reads the
# lists once a day at most.
apt=${KLPRESOLVE_APT:-/var/tmp/klpresolve-apt}
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
cat > "$apt/sources.list.new" <<LIST
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
LIST
# A changed list of sources is read again at once.
if ! cmp -s "$apt/sources.list.new" "$apt/sources.list"; then
  rm -f "$apt"/lists/*_Packages*
fi
mv "$apt/sources.list.new" "$apt/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
      -o APT::Architectures::=amd64 -o APT::Architectures::=arm64 -o Debug::NoLocking=1
      -o APT::Sandbox::User=root)
if [ -z "$(find "$apt/lists" -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null)" ]; then
  apt-get "${apt_opts[@]}" update -qq
fi
