# frozen_string_literal: true

# The functions that cost the most per request: each one's own instructions in the longer
# callgrind run minus the shorter, over the 4,000 requests between them.
runs = ARGV.map do |file|
  costs = Hash.new(0)
  `callgrind_annotate --tree=none --threshold=100 #{file}`.each_line do |line|
    next if line.include?("=>") # a call's inclusive cost, not a function's own
    m = line.match(/^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S*:\S.*)$/) or next
    costs[m[2].sub(/ \[.*\]$/, "")] += m[1].delete(",").to_i unless m[2].match?(/PROGRAM TOTALS|events annotated/)
  end
  costs
end
short, long = runs
per = (short.keys | long.keys).to_h { |k| [k, (long[k] - short[k]) / 4000.0] }
per.sort_by { |_, v| -v }.first(25).each { |name, v| printf("%9.1f  %s\n", v, name) }
