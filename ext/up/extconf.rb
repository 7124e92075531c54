# frozen_string_literal: true

# Builds the engine (engine/**/*.c, no Ruby headers) and the MRI binding (ruby/*.c) into one
# extension, up/up_ext; and, when Node's headers are there, `up`'s Node-API addon, up/up.node
# (node/build: the engine on libuv). `gem install` runs this, then make and make install,
# which put both beside lib/up; the Rakefile's compile task does the same in tmp/ext.
require "mkmf"

dir = File.expand_path(__dir__)
engine = Dir[File.join(dir, "engine", "**", "*.c")].sort
binding = Dir[File.join(dir, "ruby", "*.c")].sort
basenames = (engine + binding).map { |f| File.basename(f) }
abort "engine and binding files must have distinct names" if basenames.uniq.size != basenames.size

# Engine files include each other by their path under engine/ or by name from any of its
# folders; sources are found through VPATH, one entry per folder.
engine_dirs = ["engine", *Dir[File.join(dir, "engine", "**", "*/")].map { |d| d.delete_prefix("#{dir}/").chomp("/") }.sort]
source_dirs = engine_dirs + ["ruby"]

$srcs = basenames
source_dirs.each { |d| $VPATH << "$(srcdir)/#{d}" }
$INCFLAGS << source_dirs.map { |d| " -I$(srcdir)/#{d}" }.join
$CFLAGS << " -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter"
$CFLAGS << " -O2" unless $CFLAGS.include?("-O")
# SERVER_SOFTWARE says the gem's version (ruby/env.c).
version_file = File.expand_path("../../lib/up/version.rb", dir)
version = File.read(version_file)[/VERSION = "([^"]+)"/, 1] or abort "lib/up/version.rb has no VERSION"
$defs << %(-DUP_VERSION_STRING=\\"#{version}\\")

have_header("sys/epoll.h") or abort "UP! needs Linux epoll"
have_library("pthread")
# permessage-deflate (engine/websocket/websocket_deflate.c).
have_header("zlib.h") && have_library("z") or
  abort "UP! needs zlib for WebSocket compression: apt-get install zlib1g-dev"
# TLS (engine/transport/tls_context.c, engine/transport/transport_tls.c): OpenSSL 3, for its ticket key callback.
# (A function check would not do: mkmf's probe casts the function, which -Werror refuses.)
openssl3 = checking_for("OpenSSL 3") do
  try_compile("#include <openssl/ssl.h>\n#if OPENSSL_VERSION_MAJOR < 3\n#error too old\n#endif\n" \
              "int main(void) { return 0; }")
end
openssl3 && have_library("crypto") && have_library("ssl") or
  abort "UP! needs OpenSSL 3 for TLS (-s): apt-get install libssl-dev"

# HTTP/2 (engine/http2/) on libnghttp2; without it the engine speaks HTTP/1.1 alone and says so
# when HTTP/2 is asked for.
if have_header("nghttp2/nghttp2.h") && have_library("nghttp2")
  $defs << "-DUP_HAVE_NGHTTP2"
else
  message("libnghttp2 not found (apt-get install libnghttp2-dev): building without HTTP/2\n")
end

# `up`'s addon needs Node's own headers (node_api.h, uv.h); without them UP! installs all the
# same and `up` says what is missing when it starts.
node_include = ENV.fetch("NODE_INCLUDE", "/usr/include/node")
addon = checking_for("Node's headers in #{node_include}") do
  %w[node_api.h uv.h].all? { |h| File.file?(File.join(node_include, h)) }
end

# A packaged gem carries the npm packages of up and up_node; a git checkout (a `git:` gem,
# which Bundler builds with this file) installs them now.
root = File.expand_path("../..", dir)
if File.file?(File.join(root, "node", "package-lock.json")) && !File.directory?(File.join(root, "node", "node_modules"))
  system("npm", "ci", "--prefix", File.join(root, "node"), "--omit=dev", "--no-audit", "--no-fund", "--silent") or
    message("npm could not install node/package-lock.json's packages: up and up_node need them\n")
end

create_makefile("up/up_ext")

relative = ->(path) { "$(srcdir)/#{path.delete_prefix("#{dir}/")}" }
headers = Dir[File.join(dir, "{#{source_dirs.join(",")}}", "*.h")].sort.map(&relative)
File.open("Makefile", "a") do |f|
  # mkmf only knows the headers next to extconf.rb: without this, a changed struct in an
  # engine or binding header would leave stale objects with the old layout.
  f.puts "$(OBJS): #{headers.join(" ")}"
  f.puts "env.o: #{version_file}"
  next unless addon

  node = Dir[File.join(dir, "node", "*.{c,h}")].sort.map(&relative)
  engine_headers = headers.grep_v(%r{\A\$\(srcdir\)/ruby/})
  f.puts <<~MAKE
    CLEANFILES += up.node
    all: up.node
    up.node: $(srcdir)/node/build #{(engine.map(&relative) + engine_headers + node).join(" ")}
    \tNODE_INCLUDE=#{node_include} $(srcdir)/node/build $@
    install-so: install-addon
    install-addon: up.node $(TIMESTAMP_DIR)/.sitearchdir.-.up.time
    \t$(INSTALL_PROG) up.node $(RUBYARCHDIR)
    .PHONY: install-addon
  MAKE
end
