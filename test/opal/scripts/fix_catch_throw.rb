# frozen_string_literal: true

# throw unwinds to its catch without being rescued on the way (Sinatra's halt is a throw
# through `rescue StandardError`), and $! in a rescue body is the exception it handles,
# also after a re-raise from an inner rescue.
def route
  catch(:pass) { yield }
rescue StandardError => e
  p [:rescued, e.class]
  raise
end

p(catch(:halt) do
  route { throw :halt, "body" }
  :not_reached
end)

p(catch(:done) do
  begin
    throw :done, 42
  rescue Exception # rubocop:disable Lint/RescueException
    :rescued
  ensure
    puts "ensure ran"
  end
end)

p catch { |tag| throw tag, "anonymous" }, catch(:empty) { throw :empty }, catch(:none) { "no throw" }

begin
  throw :nobody, 1
rescue UncaughtThrowError => e
  p e.class, e.tag.to_s, e.value, e.message.start_with?("uncaught throw "), e.backtrace.empty?
end

# A caught throw leaves later exceptions their backtraces.
catch(:quick) { throw :quick }
p((raise "after a throw" rescue $!.backtrace.empty?))

begin
  catch(:outer) { throw :other }
rescue ArgumentError => e
  p e.class, e.message.include?("other")
end

begin
  begin
    begin
      raise ArgumentError, "inner"
    rescue StandardError
      raise
    end
  rescue StandardError => e
    p $!.message, e.equal?($!)
    raise
  end
rescue StandardError
  p $!.message
end
p $!
