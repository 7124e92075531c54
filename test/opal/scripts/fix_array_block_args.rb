# frozen_string_literal: true

# Array methods with a block of several parameters take each element apart, as MRI's do
# (Sinatra's caller_files: `lines.map { ... }.reject { |file, _line| ... }`).
pairs = [[1, "a"], [2, "b"], [3, "c"], [2, "d"]]
p pairs.reject { |n, _letter| n == 2 }, pairs.select { |n, _letter| n == 2 }
p pairs.index { |n, letter| n == 2 && letter == "b" }, pairs.rindex { |n, _| n == 2 }, pairs.find_index { |_, l| l == "c" }
p pairs.take_while { |n, _letter| n < 3 }, pairs.index([3, "c"]), pairs.rindex([2, "d"]), pairs.index { |pair| pair.first == 3 }
p pairs.reject { |pair| pair.first.odd? }, pairs.reject.with_index { |(n, _), i| n == i + 1 }
