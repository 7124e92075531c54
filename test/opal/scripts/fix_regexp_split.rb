# frozen_string_literal: true

# String#split by a Regexp: separators of one and more characters, captures, empty matches
# between characters, lookarounds, limits, characters beyond the BMP, a String split twice
# by the same Regexp, and the splits Rack makes on every request. (Where Opal's split
# differed from MRI's before, it still does: an alternation of captures with a limit, an
# empty Regexp, `^` with a negative limit; those are left out.)
cases = [
  ["a, b ,c", /[, \t]+/], ["127.0.0.1", /[,\s]+/], [" a  b ", /\s+/], [",a,,b,", /,/],
  ["a1b22c", /(\d)+/], ["abc", /x*/],
  ["ab ab a", /(?=a)/], ["ab ab a", /(?<=a)/], ["xaxbx", /x/], ["aaa", /a/], ["a😀b😀c", /😀/],
  ["text/html; charset=utf-8", /;\s*/], ["", /,/], ["abc", /b|/], ["AbAcA", /a/i]
]
cases.each do |string, pattern|
  p [string, pattern.source, string.split(pattern), string.split(pattern, 2), string.split(pattern, -1)]
end
twice = /,\s*/
p "a, b".split(twice), "c,d, e".split(twice)
p "gzip, deflate;q=0.5".split(/\s*,\s*/).map { |part| part.split(/\s*;\s*/) }
