# frozen_string_literal: true

require_relative "helper"

# up_node's String#inspect and Hash#inspect (opal/up/node/fast_inspect.rb), against MRI's.
class TestOpalFastInspect < Minitest::Test
  def test_string_and_hash_inspect_match_mri
    out = assert_same_on_opal_and_mri("fast_inspect")
    assert_includes out, %({"p"=>{}, "q"=>{}})
  end
end
