# frozen_string_literal: true

# Names of a Regexp's groups and MatchData#named_captures, asked more than once of the same
# Regexp (Mustermann asks its route's on every request): fresh objects each time, duplicate
# names giving the last group that matched, and the names of a Regexp built at run time.
route = Regexp.new("\\A/(?<name>[^/]+)/(?<id>\\d+)?(?:\\.(?<format>\\w+))?\\z")
3.times do |i|
  match = route.match("/item#{i}/#{i}#{'.json' if i.odd?}")
  captures = match.named_captures
  p captures
  captures["name"] = "changed"
  captures.delete("id")
end
p route.names, route.named_captures
first = route.named_captures
first["name"] << 9
p route.named_captures, route.match("/x/").named_captures

either = Regexp.new("(?<word>[a-z]+)|(?<word>\\d+)")
p either.names, either.named_captures, either.match("abc").named_captures, either.match("42").named_captures
p either.match("abc").named_captures, Regexp.new("plain(s)?").named_captures, Regexp.new("plain").match("plain").named_captures
