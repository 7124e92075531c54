# frozen_string_literal: true

# File.fnmatch (Sinatra matches Accept entries with it) over the cases of MRI's
# documentation and more: wildcards, brackets, escapes, the leading period, each flag.
CASES = [
  ["cat", "cat"], ["cat", "category"], ["c{at,ub}s", "cats"], ["c?t", "cat"], ["c??t", "cat"],
  ["c*", "cats"], ["c*t", "c/a/b/t"], ["ca[a-z]", "cat"], ["ca[^t]", "cat"], ["ca[!t]", "cab"],
  ["text/*", "text/html"], ["*/*", "application/json"], ["text/html", "text/html"], ["text/*", "image/png"],
  ["*", ".profile"], ["*", "dave/.profile"], ["*", "dave/.profile", File::FNM_PATHNAME],
  ["*/*", "dave/.profile", File::FNM_PATHNAME], ["*/.*", "dave/.profile", File::FNM_PATHNAME],
  ["*", ".profile", File::FNM_DOTMATCH], [".*", ".profile"], ["[.]*", ".profile"], ["\\.*", ".profile"],
  ["?", "/", File::FNM_PATHNAME], ["*", "/", File::FNM_PATHNAME], ["[/]", "/", File::FNM_PATHNAME],
  ["\\?", "?"], ["\\a", "a"], ["\\a", "\\a", File::FNM_NOESCAPE], ["[\\?]", "?"],
  ["cat", "CAT"], ["cat", "CAT", File::FNM_CASEFOLD], ["[A-Z]at", "cat", File::FNM_CASEFOLD],
  ["**/foo", "a/b/c/foo", File::FNM_PATHNAME], ["**/foo", "/a/b/c/foo", File::FNM_PATHNAME],
  ["**/foo", "c:/a/b/c/foo", File::FNM_PATHNAME], ["**/foo", "a/.b/c/foo", File::FNM_PATHNAME],
  ["**/foo", "a/.b/c/foo", File::FNM_PATHNAME | File::FNM_DOTMATCH], ["**/foo", "foo", File::FNM_PATHNAME],
  ["**.rb", "main.rb"], ["**.rb", "./main.rb"], ["**.rb", "lib/song.rb"], ["**/*.rb", "lib/song.rb", File::FNM_PATHNAME],
  ["*.rb", "lib/song.rb"], ["*.rb", "lib/song.rb", File::FNM_PATHNAME], ["{a,b{c,d}}x", "bdx", File::FNM_EXTGLOB],
  ["{a,b}", "{a,b}"], ["[a-", "[a-"], ["a[", "a["], ["*é", "café"], ["?", "é"], ["[é-ë]", "ê"],
  ["**", "a/b", File::FNM_PATHNAME], ["a/**", "a/b/c", File::FNM_PATHNAME], ["a/*", "a/", File::FNM_PATHNAME],
  ["text/*;q=0.8", "text/*;q=0.8"], ["", ""], ["*", ""]
].freeze

CASES.each do |pattern, path, flags|
  p [pattern, path, flags || 0, File.fnmatch(pattern, path, flags || 0), File.fnmatch?(pattern, path, flags || 0)]
end
p File::FNM_SYSCASE, File::FNM_SHORTNAME
