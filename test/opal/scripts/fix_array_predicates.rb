# frozen_string_literal: true

# Array#all?, #any?, #none?, #find and #detect: answers known early and late, what the block
# is given (whole elements, elements taken apart), break and return through them, an Array
# changed while it is walked, patterns, no block, ifnone, and subclasses.
list = [1, 2, 3, 4]
p [list.all? { |x| x < 3 }, list.all? { |x| x < 9 }, [].all? { false }]
p [list.any? { |x| x > 2 }, list.any? { |x| x > 9 }, [].any? { true }]
p [list.none? { |x| x > 2 }, list.none? { |x| x > 9 }, [].none? { true }]
p [list.find { |x| x > 1 }, list.detect { |x| x > 9 }, list.find { |x| x.even? }, [nil, false, 0].find { |x| x.nil? }]

seen = []
list.all? { |x| seen << x; x < 2 }
list.any? { |x| seen << -x; x > 2 }
list.none? { |x| seen << x * 10; x == 2 }
list.find { |x| seen << x * 100; x == 3 }
p seen

pairs = [[1, "a"], [2, "b"], [3, "c"]]
p [pairs.all? { |n, s| n < 4 && s.is_a?(String) }, pairs.any? { |n, _| n == 2 }, pairs.find { |n, s| s == "c" }]
p [pairs.all? { |pair| pair.size == 2 }, pairs.detect { |(n, _)| n > 1 }, pairs.none? { |n, s, extra| extra }]
p({ a: 1, b: 2 }.to_a.any? { |k, v| k == :b && v == 2 })

p([1, 2, 3].all? { |x| break x * 7 if x == 2; true })
def first_big(list)
  list.any? { |x| return "returned #{x}" if x > 1 }
  "none"
end
p first_big([1, 2, 3]), first_big([0])

grow = [1, 2]
p grow.all? { |x| grow << x + 2 if grow.size < 5; true }, grow
shrink = [1, 2, 3, 4]
p shrink.find { |x| shrink.pop; x > 2 }, shrink

p [list.all?(Integer), list.any?(3..3), list.none?(String), [1, nil].all?, [nil, false].any?, [nil].none?]
p [list.find(-> { "nothing" }) { |x| x > 9 }, list.detect(-> { :none }) { |x| x > 1 }]
p list.find.class, list.all?, [nil].detect { |x| x.nil? }

class Row < Array; end
row = Row.new([5, 6])
p [row.all? { |x| x > 4 }, row.any?(&:even?), row.find(&:even?), row.none?(&:zero?)]

begin
  [1].all? { |x| raise ArgumentError, "from #{x}" }
rescue ArgumentError => e
  p e.message
end
p catch(:found) { [1, 2].any? { |x| throw :found, x * 3 if x == 2 } }

fields = { "Content-Type" => "text/html", "X-A" => "1", "x-b" => "2" }
p fields.detect { |k, _v| k.downcase == "content-type" }, fields.find { |k, v| v == "2" }, fields.find { |k, _| k == "none" }
p fields.detect { |pair| pair.last == "1" }, fields.find { |(k, v)| k.size == 3 && v }, {}.detect { true }
found = fields.find { |k, _| k == "X-A" }
found << "changed"
p found, fields, fields.find(-> { "none" }) { false }

class Listed < Array
  def each
    super { |x| yield x * 10 }
  end
end
class Keyed < Hash
  def each
    super { |k, v| yield [k.upcase, v] }
  end
end
keyed = Keyed.new
keyed["a"] = 1
p Listed.new([1, 2]).find { |x| x > 5 }, Listed.new([1, 2]).all? { |x| x < 5 }, keyed.find { |k, _| k == "A" }
