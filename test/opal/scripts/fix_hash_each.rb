# frozen_string_literal: true

# Hash#each and #each_pair: pairs as one argument or taken apart, the Hash as the result,
# break with a value, an Enumerator without a block, the current pair deleted in the block,
# keys of every kind, and an empty Hash.
headers = { "content-type" => "text/html", "x-a" => "1", 3 => [4], nil => "none", [1, 2] => "array key" }
headers.each { |key, value| p [key, value] }
headers.each_pair { |pair| p pair }
p headers.each { |_key, _value| nil }.equal?(headers)
p(headers.each { |key, _value| break "broke at #{key}" if key == "x-a" })
p headers.each.size, headers.each_pair.to_a.length, headers.each.next
seen = []
copy = headers.dup
copy.each { |key, _value| seen << key; copy.delete(key) }
p seen.length, copy.empty?
p({}.each { raise "not called" })
p headers.map { |key, value| "#{key}=#{value}" }
p headers.each_with_index.map { |(key, _value), index| [index, key] }
