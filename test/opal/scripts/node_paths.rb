# frozen_string_literal: true

# File and Dir class methods on paths Opal holds as boxed Strings (bytes), with blocks, and
# File.dirname and expand_path on MRI's edge cases.
paths = ["/a/b/c", "/a/b/", "/a", "//a", "//a/b", "///a/b", "a", "a/", "a/b", "a//b/", "/", "//", ".", "..",
         "../a", "./a", "/a/./b", "/a/../b", "", "/a/b/../c", "/a/./b/", "///a/b/", "/../a", "/a//b", "/a/b/.."]
paths.each { |path| p [path, File.dirname(path), File.expand_path(path, "/base/dir"), File.expand_path(path.b, "/base")] }
paths.grep(%r{\A/}).each { |path| p [path, File.expand_path(path), File.expand_path(path.b), File.dirname(path.b)] }
p File.dirname("/a/b/c/d", 2), File.dirname("a/b", 0), File.join("a".b, "b", "c".b), File.basename("/x/y.rb".b, ".rb")

# This script's own directory (the tests run it from there), through bytes; File.open's block.
here = Dir.pwd.b
p File.file?(File.join(here, "node_paths.rb").b), File.exist?(File.join(here, "none").b),
  File.size(File.join(here, "node_paths.rb").b) == File.read("node_paths.rb").bytesize,
  Dir.glob(File.join(here, "node_pat*.rb").b).map { |f| File.basename(f) },
  Dir.entries(here).include?("node_paths.rb"), File.open("node_paths.rb".b) { |f| f.gets }

# File.join of plain Strings (its direct path) and of anything else, seam by seam.
p File.join("a", "b"), File.join("a/", "b"), File.join("a//", "/b"), File.join("a", "//b"), File.join("/", "x"),
  File.join("", "b"), File.join("a", ""), File.join("a"), File.join, File.join("", ""), File.join("//", "//"),
  File.join("a", ["b", ["c/"]], "/d"), File.join("a".b, "/b/"), File.join("é", "ü/", "/ß")
