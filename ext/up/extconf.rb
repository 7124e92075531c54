# frozen_string_literal: true

# Builds the engine (engine/**/*.c, no Ruby headers) and the MRI binding (ruby/*.c) into one
# extension, up/up_ext.
require "mkmf"

dir = File.expand_path(__dir__)
engine = Dir[File.join(dir, "engine", "**", "*.c")].sort
binding = Dir[File.join(dir, "ruby", "*.c")].sort
basenames = (engine + binding).map { |f| File.basename(f) }
abort "engine and binding files must have distinct names" if basenames.uniq.size != basenames.size

$srcs = basenames
# Engine headers are included by their path under engine/ ("core/conn.h"); sources are found
# through VPATH, one entry per folder.
engine.map { |f| File.dirname(f).delete_prefix("#{dir}/") }.uniq.each { |d| $VPATH << "$(srcdir)/#{d}" }
$VPATH << "$(srcdir)/ruby"
$INCFLAGS << " -I$(srcdir)/engine -I$(srcdir)/ruby"
$CFLAGS << " -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter"
$CFLAGS << " -O2" unless $CFLAGS.include?("-O")

have_header("sys/epoll.h") or abort "UP! needs Linux epoll"
have_library("pthread")
# permessage-deflate (engine/websocket/websocket_deflate.c).
have_header("zlib.h") && have_library("z") or
  abort "UP! needs zlib for WebSocket compression: apt-get install zlib1g-dev (bin/setup does)"
# TLS (engine/transport/tls_context.c, engine/transport/transport_tls.c): OpenSSL 3, for its ticket key callback.
# (A function check would not do: mkmf's probe casts the function, which -Werror refuses.)
openssl3 = checking_for("OpenSSL 3") do
  try_compile("#include <openssl/ssl.h>\n#if OPENSSL_VERSION_MAJOR < 3\n#error too old\n#endif\n" \
              "int main(void) { return 0; }")
end
openssl3 && have_library("crypto") && have_library("ssl") or
  abort "UP! needs OpenSSL 3 for TLS (-s): apt-get install libssl-dev (bin/setup does)"

create_makefile("up/up_ext")

# mkmf only knows the headers next to extconf.rb: without this, a changed struct in
# engine/**/*.h or ruby/*.h would leave stale objects with the old layout.
headers = Dir[File.join(dir, "{engine/**,ruby}", "*.h")].sort.map { |h| "$(srcdir)/#{h.delete_prefix("#{dir}/")}" }
File.open("Makefile", "a") { |f| f.puts "$(OBJS): #{headers.join(" ")}" }
