# frozen_string_literal: true

# Array#map, #collect, #select, #filter and #reject: what the block is given (elements whole
# and taken apart), what is kept, an Array changed while it is walked, break, Enumerators,
# subclasses, and the yields under them (blocks of no, one and several parameters).
list = [1, 2, 3, 4, 5]
p list.map { |x| x * 2 }, list.collect(&:to_s), list.select(&:odd?), list.filter { |x| x > 3 }, list.reject(&:even?)
p [].map { 1 }, [].select { true }, [].reject { false }, [nil, false, 0].select { |x| x }, [nil, false, 0].reject { |x| x }
pairs = [[1, "a"], [2, "b"], [3, "c"]]
p pairs.map { |n, s| "#{s}#{n}" }, pairs.select { |n, _| n.odd? }, pairs.reject { |(n, s)| s == "b" }, pairs.map { |pair| pair.size }
p pairs.map { |n, s, extra| [n, s, extra] }, pairs.map { |n,| n }, pairs.map { || 0 }, pairs.map { |*all| all }

grow = [1, 2]
p grow.map { |x| grow << x + 2 if grow.size < 5; x }, grow
shrink = [1, 2, 3, 4, 5, 6]
p shrink.map { |x| shrink.pop; x }, shrink
shrink = [1, 2, 3, 4, 5, 6]
p shrink.select { |x| shrink.pop; x.odd? }, shrink.reject { |x| shrink.shift; x > 10 }, shrink

p([1, 2, 3].map { |x| break x * 10 if x == 2; x })
p list.map.class, list.select.each_with_index.to_a, list.reject.with_index { |x, i| i.odd? }, list.map.with_index(1).to_a

class Row < Array; end
row = Row.new([1, 2, 3])
p row.map { |x| x }.class, row.select(&:odd?).class, row.reject(&:odd?).class
p [[1, [2, 3]]].map { |a, (b, c)| a + b + c }, { "k" => 1 }.map { |k, v| [k, v] }, { "k" => 1 }.select { |k, v| v == 1 }
