# frozen_string_literal: true

require_relative "helper"

# Marshal on Opal (opal/marshal.rb) writes MRI's bytes and reads what MRI writes, so that a
# cookie or a cache entry made on one runtime opens on the others.
class TestOpalMarshal < Minitest::Test
  # Each kind of value dumped on Opal is MRI's own bytes, and loads back to the same value.
  def test_dump_writes_mris_bytes_and_load_reads_them_back
    out = assert_same_on_opal_and_mri("marshal_types")
    session = { "session_id" => "a1b2c3", "csrf" => "tok==", "flash" => { "notice" => "Saved" }, "count" => 3, "user" => "Jürgen" }
    assert_includes out, "session: #{Marshal.dump(session).unpack1('H*')} ASCII-8BIT\n"
    assert_includes out, "bignums: #{Marshal.dump([2**30, -(2**30) - 1, 2**40, -(2**40), 2**52 + 3, 2**53]).unpack1('H*')} "
    assert_includes out, "too short: marshal data too short\n"
  end

  # Bytes MRI writes that Opal never writes (Symbols, whole Floats, a linked String) load
  # on Opal to values equal to MRI's.
  def test_load_reads_what_only_mri_writes
    hex, err, status = OpalRack.run_mri("marshal_from_mri")
    assert status.success?, err
    js = OpalRack.bundle("marshal_from_mri")
    out, err, status = OpalRack.capture({ "NODE_PATH" => OpalRack::NODE_PATH, "MARSHAL_HEX" => hex.strip }, "node", js)
    assert status.success?, "marshal_from_mri failed on Opal:\n#{err[0, 4000]}"
    assert_equal (0..7).map { |i| "#{i}: true\n" }.join + "linked String is one object: true\n", out
  end
end
