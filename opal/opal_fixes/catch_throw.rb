# frozen_string_literal: true
# backtick_javascript: true

# throw and catch, and $! in a rescue body, as in MRI.
#
# Opal's throw raised an UncaughtThrowError, a StandardError, so every `rescue` between the
# throw and its catch handled it: Sinatra's `halt` is a throw through `rescue StandardError`
# (Base#process_route), which re-raises with a bare `raise`. MRI's throw is not an
# exception while a catch for its tag is waiting: no rescue sees it, ensure blocks run. As
# in MRI, a throw with no catch waiting raises UncaughtThrowError where it is, which can be
# rescued.
#
# And a bare `raise` in a rescue body re-raises $!, which Opal's bookkeeping had set back to
# nil when the exception came from an inner rescue that re-raised it (pop_exception pops
# what raise never pushed): the re-raise became `RuntimeError: ""`. Here $! is set to the
# exception whenever a rescue clause takes it.
%x{
  var up_catch_tags = [];

  var up_rescue = Opal.rescue;
  Opal.rescue = function(exception, candidates) {
    if (exception != null && exception.$$up_thrown) return null;
    var matched = up_rescue(exception, candidates);
    if (matched) Opal.gvars["!"] = exception;
    return matched;
  };
}

module Kernel
  def catch(tag = nil)
    tag = ::Object.new if tag.nil?
    %x{
      up_catch_tags.push(tag);
      try {
        return #{yield tag};
      } catch (error) {
        if (error != null && error.$$up_thrown && error.$tag() === tag) return error.$value();
        throw error;
      } finally {
        up_catch_tags.pop();
      }
    }
  end

  # A throw that a catch waits for is control flow that no one sees (Sinatra and Roda throw
  # :halt on every request), so it throws an UncaughtThrowError made without its JS Error
  # constructor: V8 would otherwise record up to Error.stackTraceLimit frames twice, in that
  # constructor and in Opal's captureStackTrace. It has the tag and value, for its catch.
  def throw(tag, value = nil)
    ::Kernel.raise ::UncaughtThrowError.new(tag, value) unless `up_catch_tags.indexOf(tag) !== -1`

    %x{
      var error = Object.create(#{::UncaughtThrowError}.$$prototype);
      error.tag = tag;
      error.value = value;
      error.$$up_thrown = true;
      throw error;
    }
  end
end
